package upstream

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every wait of these tests.
const testTimeout = 10 * time.Second

// rawUpstream is an upstream that answers each request with bytes a test
// scripts, and counts the connections it accepted. It listens on loopback.
type rawUpstream struct {
	ln       net.Listener
	answer   func(r *http.Request) (raw string, hangUp bool)
	mu       sync.Mutex // guards the following fields
	conns    int
	requests []string // each request's head, as sent
	open     []net.Conn
}

func newRawUpstream(t *testing.T, answer func(r *http.Request) (string, bool)) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln, answer: answer}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns++
			u.open = append(u.open, c)
			u.mu.Unlock()
			wg.Go(func() { u.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		u.mu.Lock()
		for _, c := range u.open {
			c.Close()
		}
		u.mu.Unlock()
		wg.Wait()
	})
	return u
}

func (u *rawUpstream) serve(c net.Conn) {
	defer c.Close()
	// Requests come one at a time, so what the reader takes from the
	// connection is one request.
	var head strings.Builder
	br := bufio.NewReader(io.TeeReader(c, &head))
	for {
		head.Reset()
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.requests = append(u.requests, head.String())
		u.mu.Unlock()
		raw, hangUp := u.answer(r)
		if _, err := io.WriteString(c, raw); err != nil || hangUp {
			return
		}
	}
}

func (u *rawUpstream) url() *url.URL { return &url.URL{Scheme: "http", Host: u.ln.Addr().String()} }

func (u *rawUpstream) accepted() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.conns
}

// directProxy serves with Direct to target, and 502 when Forward fails;
// reverseProxy with httputil.ReverseProxy over Standard, the reference.
func directProxy(t *testing.T, target *url.URL) (*httptest.Server, *Direct) {
	t.Helper()
	d := Transport().Direct(target, nil)
	if d == nil {
		t.Fatalf("Direct(%s) = nil", target)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.Takes(r) {
			t.Errorf("Takes(%s %s) = false", r.Method, r.URL)
		}
		if err := d.Forward(w, r, nil); err != nil {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(d.pool.closeIdle)
	return srv, d
}

func reverseProxy(t *testing.T, target *url.URL) *httptest.Server {
	t.Helper()
	tr := Standard()
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: tr,
		ErrorLog:  nil,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	t.Cleanup(srv.Close)
	t.Cleanup(tr.CloseIdleConnections)
	return srv
}

// seen is what a client saw of an answer.
type seen struct {
	status   int
	header   http.Header
	body     string
	trailer  http.Header
	complete bool // the body arrived whole
}

func fetch(t *testing.T, client *http.Client, method, url string) seen {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil { // cut before the head
		return seen{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	h := resp.Header.Clone()
	h.Del("Date")
	return seen{status: resp.StatusCode, header: h, body: string(b), trailer: resp.Trailer, complete: err == nil}
}

// differential lists upstream answers, each as bytes on the wire, that the
// direct path must pass on as httputil.ReverseProxy over net/http's
// Transport does.
var differential = []struct {
	name, method, raw string
}{
	{"length", "GET", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"},
	{"chunked", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"},
	{"chunked with extension", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\n\r\n"},
	{"announced trailer", "GET", "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 42\r\n\r\n"},
	{"unannounced trailer", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Late: 1\r\n\r\n"},
	{"until close", "GET", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it"},
	{"HTTP/1.0", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi"},
	{"no content", "GET", "HTTP/1.1 204 No Content\r\n\r\n"},
	{"not modified", "GET", "HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n"},
	{"head", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"},
	{"hop-by-hop removed", "GET", "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-End: 2\r\nContent-Length: 0\r\n\r\n"},
	{"repeated fields", "GET", "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n"},
	{"early hints", "GET", "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"error status", "GET", "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nContent-Length: 4\r\n\r\nbusy"},
	{"custom status", "GET", "HTTP/1.1 599 Custom\r\nContent-Length: 0\r\n\r\n"},
	{"bare LF", "GET", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok"},
	{"malformed status", "GET", "HTTP/1.1 2x0 OK\r\n\r\n"},
	{"not HTTP", "GET", "SSH-2.0-OpenSSH_9.6\r\n"},
	{"header without colon", "GET", "HTTP/1.1 200 OK\r\nBroken\r\n\r\n"},
	{"lengths disagree", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"},
	{"bad length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"},
	{"unknown coding", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"},
	{"trailer names a framing field", "GET", "HTTP/1.1 200 OK\r\nTrailer: Content-Length\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
	{"switch unasked", "GET", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"},
	{"hang-up before answer", "GET", ""},
	{"cut head", "GET", "HTTP/1.1 200 OK\r\nContent-"},
	{"cut body", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"},
	{"cut chunks", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"},
	{"bad chunk size", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n"},
}

// TestDirectMatchesReverseProxy sends each answer of differential through
// the direct path and through httputil.ReverseProxy over net/http's
// Transport: the client sees the same status, header, body, trailers, and
// the same cut when the upstream breaks off.
func TestDirectMatchesReverseProxy(t *testing.T) {
	for _, tt := range differential {
		t.Run(tt.name, func(t *testing.T) {
			up := newRawUpstream(t, func(*http.Request) (string, bool) { return tt.raw, true })
			direct, _ := directProxy(t, up.url())
			reverse := reverseProxy(t, up.url())
			client := &http.Client{Timeout: testTimeout, Transport: &http.Transport{DisableCompression: true}}
			defer client.CloseIdleConnections()
			got := fetch(t, client, tt.method, direct.URL+"/x")
			want := fetch(t, client, tt.method, reverse.URL+"/x")
			if !want.complete {
				// The upstream broke off: the client must see a cut
				// answer, whether or not its head came through.
				if got.complete {
					t.Errorf("got a whole answer %d %q, want a cut one", got.status, got.body)
				}
				return
			}
			if got.status != want.status || got.body != want.body || got.complete != want.complete {
				t.Errorf("got %d %q (whole: %v), want %d %q (whole: %v)", got.status, got.body, got.complete, want.status, want.body, want.complete)
			}
			if streamedUntyped(tt.raw) {
				// net/http sniffs a Content-Type from the first bytes
				// unless the head went out alone: ReverseProxy's flush
				// timer races its first write; the direct path sends
				// such a head at once, as the upstream gave it.
				got.header.Del("Content-Type")
				want.header.Del("Content-Type")
			}
			if !equalHeader(got.header, want.header) {
				t.Errorf("header: got %v, want %v", got.header, want.header)
			}
			if !equalHeader(got.trailer, want.trailer) {
				t.Errorf("trailer: got %v, want %v", got.trailer, want.trailer)
			}
		})
	}
}

// streamedUntyped reports whether an upstream answer has neither a
// Content-Type nor a Content-Length.
func streamedUntyped(raw string) bool {
	head, _, _ := strings.Cut(raw, "\r\n\r\n")
	return !strings.Contains(head, "Content-Type:") && !strings.Contains(head, "Content-Length:")
}

// equalHeader compares headers as a client reads them: the order of a
// field's values counts, the order of a list's names does not.
func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for name, av := range a {
		bv, ok := b[name]
		if !ok || len(av) != len(bv) {
			return false
		}
		if name == "Trailer" {
			av, bv = sortedList(av), sortedList(bv)
		}
		if !slices.Equal(av, bv) {
			return false
		}
	}
	return true
}

func sortedList(lines []string) []string {
	var names []string
	for _, l := range lines {
		for n := range strings.SplitSeq(l, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	slices.Sort(names)
	return names
}

// TestDirectStricter lists answers net/http's Transport reads and the
// direct path refuses, with a 502: each is how smuggling or response
// splitting starts, and RFC 9112 lets a proxy refuse it.
func TestDirectStricter(t *testing.T) {
	for name, raw := range map[string]string{
		"chunked and a length": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"folded line":          "HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\nContent-Length: 0\r\n\r\n",
		"chunked on HTTP/1.0":  "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"control byte":         "HTTP/1.1 200 OK\r\nX-A: b\x01\r\nContent-Length: 0\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			up := newRawUpstream(t, func(*http.Request) (string, bool) { return raw, true })
			direct, _ := directProxy(t, up.url())
			client := &http.Client{Timeout: testTimeout}
			defer client.CloseIdleConnections()
			if got := fetch(t, client, "GET", direct.URL+"/x"); got.status != http.StatusBadGateway {
				t.Errorf("got %d, want 502", got.status)
			}
		})
	}
}

// TestDirectHeadLimit refuses a head, 1xx heads included, over the
// Transport's MaxResponseHeaderBytes.
func TestDirectHeadLimit(t *testing.T) {
	big := "X-Big: " + strings.Repeat("a", 3000) + "\r\n"
	tests := []struct {
		name, raw string
		want      int
	}{
		{"under", "HTTP/1.1 200 OK\r\n" + big + "Content-Length: 0\r\n\r\n", 200},
		{"over", "HTTP/1.1 200 OK\r\n" + big + big + "Content-Length: 0\r\n\r\n", 502},
		{"over with 1xx", "HTTP/1.1 103 Early Hints\r\n" + big + "\r\nHTTP/1.1 200 OK\r\n" + big + "Content-Length: 0\r\n\r\n", 502},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRawUpstream(t, func(*http.Request) (string, bool) { return tt.raw, false })
			c := Transport()
			c.MaxResponseHeaderBytes = 5000
			d := c.Direct(up.url(), nil)
			defer d.pool.closeIdle()
			w := httptest.NewRecorder()
			status := 0
			if err := d.Forward(w, httptest.NewRequest("GET", "/x", nil), nil); err != nil {
				status = http.StatusBadGateway
			} else {
				status = w.Code
			}
			if status != tt.want {
				t.Errorf("got %d, want %d", status, tt.want)
			}
		})
	}
}
