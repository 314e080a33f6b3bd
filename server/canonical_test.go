package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is an upstream that records the target and headers of every
// request it serves, and answers 200 with the path.
type recorder struct {
	mu   sync.Mutex // guards seen
	seen []*http.Request
	url  string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Clone(r.Context()))
		rec.mu.Unlock()
		io.WriteString(w, r.URL.Path)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	rec.url = "http://" + ln.Addr().String()
	return rec
}

// last returns the last request the upstream saw, or nil.
func (rec *recorder) last() *http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seen) == 0 {
		return nil
	}
	return rec.seen[len(rec.seen)-1]
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.seen)
}

// writeConfig writes a config file into a temporary directory.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admit.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawAnswer is what a raw request got back.
type rawAnswer struct {
	status int
	header http.Header
	body   string
	close  bool // the answer said Connection: close (ReadResponse removes the header)
	closed bool // the server closed the connection after the answer
}

// raw sends request bytes on a new connection to addr and reads one
// answer, then whether the server closes the connection.
func raw(t *testing.T, addr, request string) rawAnswer {
	t.Helper()
	return rawFrom(t, "127.0.0.1", addr, request)
}

// rawFrom is raw from local address from.
func rawFrom(t *testing.T, from, addr, request string) rawAnswer {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: testTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: reading the answer: %v", firstLine(request), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// A server that keeps the connection open waits for the next request;
	// one that closed it gives EOF at once. A short read deadline tells
	// them apart without waiting for the server's idle timeout.
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	extra, err := br.ReadByte()
	closed := err == io.EOF
	if err == nil {
		t.Fatalf("%q: the server sent more after the answer (%q...): a second answer to a smuggled request?", firstLine(request), extra)
	}
	return rawAnswer{status: resp.StatusCode, header: resp.Header, body: string(body), close: resp.Close, closed: closed}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// limitedApp starts admit in front of rec with link routes whose burst is
// 3, and extra flags.
func limitedApp(t *testing.T, rec *recorder, extra ...string) *running {
	t.Helper()
	cfg := writeConfig(t, `
routes:
  - {group: link, pattern: "GET /l/{id}"}
  - {group: link, pattern: "GET /Docs/{page}"}
  - {group: link, pattern: "GET example.com/h/{id}"}
budgets:
  link: {burst: 3, per_client: 100, inflight: 100}
`)
	return start(t, append([]string{"--upstream", rec.url, "--config", cfg}, extra...)...)
}

const linkTestBurst = 3

// TestSpellingsAreLimited sends each spelling of a limited request more
// times than the burst: each must either be refused as malformed or be
// limited under the link group, and the upstream must receive the one
// canonical target admit decided on.
func TestSpellingsAreLimited(t *testing.T) {
	for _, tc := range []struct {
		name, request string // request line and headers, without the final CRLF
		want          string // the target the upstream receives
	}{
		{"as routed", "GET /l/x HTTP/1.1\r\nHost: a", "/l/x"},
		{"dot segments", "GET /l/./y/../x HTTP/1.1\r\nHost: a", "/l/x"},
		{"encoded dot segments", "GET /l/%2e%2e/l/x HTTP/1.1\r\nHost: a", "/l/x"},
		{"doubled slashes", "GET //l//x HTTP/1.1\r\nHost: a", "/l/x"},
		{"escaped letters", "GET /%6C/%78 HTTP/1.1\r\nHost: a", "/l/x"},
		{"upper case", "GET /L/x HTTP/1.1\r\nHost: a", "/L/x"},
		{"trailing slash", "GET /l/x/ HTTP/1.1\r\nHost: a", "/l/x/"},
		{"upper case route, lower case request", "GET /docs/intro HTTP/1.1\r\nHost: a", "/docs/intro"},
		{"upper case host", "GET /h/x HTTP/1.1\r\nHost: EXAMPLE.COM", "/h/x"},
		{"trailing dot host", "GET /h/x HTTP/1.1\r\nHost: example.com.", "/h/x"},
		{"default port", "GET /h/x HTTP/1.1\r\nHost: example.com:80", "/h/x"},
		{"absolute form", "GET http://Example.COM/h/x HTTP/1.1\r\nHost: other", "/h/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t)
			r := limitedApp(t, rec)
			addr := strings.TrimPrefix(r.url, "http://")
			req := tc.request + "\r\nConnection: close\r\n\r\n"
			for i := range linkTestBurst {
				a := raw(t, addr, req)
				if a.status != http.StatusOK {
					t.Fatalf("request %d: got %d %q, want 200", i+1, a.status, a.body)
				}
			}
			if a := raw(t, addr, req); a.status != http.StatusTooManyRequests {
				t.Fatalf("request %d: got %d, want 429: the spelling walks around the link limit", linkTestBurst+1, a.status)
			}
			if got := rec.count(); got != linkTestBurst {
				t.Errorf("upstream served %d, want the burst, %d", got, linkTestBurst)
			}
			if got := rec.last().RequestURI; got != tc.want {
				t.Errorf("upstream received %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMalformedRequests checks that requests with no canonical form are
// refused before they reach the door or the upstream.
func TestMalformedRequests(t *testing.T) {
	rec := newRecorder(t)
	r := limitedApp(t, rec)
	addr := strings.TrimPrefix(r.url, "http://")
	for _, line := range []string{
		"GET /l%2Fx HTTP/1.1", "GET /l%2fx HTTP/1.1", "GET /l%5Cx HTTP/1.1", "GET /l\\x HTTP/1.1",
		"GET /u/x%2F HTTP/1.1", "GET /l/x%00 HTTP/1.1", "GET /l/x#frag HTTP/1.1", "GET /l/x?a#b HTTP/1.1",
		"get /l/x HTTP/1.1", "Get /l/x HTTP/1.1", "GET * HTTP/1.1", "POST * HTTP/1.1",
	} {
		a := raw(t, addr, line+"\r\nHost: a\r\n\r\n")
		if a.status != http.StatusBadRequest || !a.closed {
			t.Errorf("%q: got %d (connection closed: %v), want 400 and a closed connection", line, a.status, a.closed)
		}
	}
	// net/http answers OPTIONS * itself; it never reaches the upstream.
	if a := raw(t, addr, "OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); a.status != http.StatusOK {
		t.Errorf("OPTIONS *: got %d, want net/http's own 200", a.status)
	}
	if n := rec.count(); n != 0 {
		t.Errorf("the upstream served %d malformed requests, want 0", n)
	}
	if got := r.scrapeCount(t, "admit_server_malformed_total"); got != 12 {
		t.Errorf("admit_server_malformed_total: got %d, want 12", got)
	}
}

func TestEscapedSlashPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy, target string
		status         int
		want           string // what the upstream receives
	}{
		{"decode", "/u%2Fx", http.StatusOK, "/u/x"},
		{"decode", "/u%5Cx", http.StatusOK, "/u/x"},
		{"decode", "/u\\x", http.StatusOK, "/u/x"},
		{"keep", "/u%2fx", http.StatusOK, "/u%2Fx"},
		{"keep", "/u\\x", http.StatusOK, "/u%5Cx"},
		{"reject", "/u%2Fx", http.StatusBadRequest, ""},
	} {
		rec := newRecorder(t)
		r := limitedApp(t, rec, "--escaped-slashes", tc.policy)
		a := raw(t, strings.TrimPrefix(r.url, "http://"), "GET "+tc.target+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		if a.status != tc.status {
			t.Errorf("--escaped-slashes %s, %s: got %d, want %d", tc.policy, tc.target, a.status, tc.status)
			continue
		}
		if tc.want != "" && rec.last().RequestURI != tc.want {
			t.Errorf("--escaped-slashes %s, %s: upstream received %q, want %q", tc.policy, tc.target, rec.last().RequestURI, tc.want)
		}
	}
	// Decoded, an encoded slash is a separator like any other, so the
	// limit holds on it.
	rec := newRecorder(t)
	r := limitedApp(t, rec, "--escaped-slashes", "decode")
	addr := strings.TrimPrefix(r.url, "http://")
	req := "GET /l%2Fx HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	for range linkTestBurst {
		raw(t, addr, req)
	}
	if a := raw(t, addr, req); a.status != http.StatusTooManyRequests {
		t.Errorf("decoded /l%%2Fx past the burst: got %d, want 429", a.status)
	}
}

// TestFoldingLimitsOnlyLimitedRoutes shows that folding does not limit what
// it should not: unrouted paths, in any case and with or without a slash,
// pass unlimited and unchanged.
func TestFoldingLimitsOnlyLimitedRoutes(t *testing.T) {
	rec := newRecorder(t)
	r := limitedApp(t, rec)
	for _, path := range []string{"/u/x", "/U/X/", "/l", "/l/x/y", "/account/Settings", "/docs"} {
		for i := range 3 * linkTestBurst {
			resp, _ := r.do(t, "GET", path, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s #%d: got %d, want 200", path, i+1, resp.StatusCode)
			}
		}
		if got := rec.last().RequestURI; got != path {
			t.Errorf("GET %s: upstream received %q, want it unchanged", path, got)
		}
	}
	// Without folding, a spelling the Go mux would not route is unlimited.
	rec = newRecorder(t)
	r = limitedApp(t, rec, "--route-folding=false")
	r.answers(t, 3*linkTestBurst, http.StatusOK, "GET", "/L/x", "")
	r.answers(t, linkTestBurst, http.StatusOK, "GET", "/l/x", "")
	r.rejected(t, "GET", "/l/x", "")
}

// overrideApp is limitedApp with a route naming POST on /l/, nearly
// unlimited, so that a POST there is held to GET's limit only as an
// override makes it a GET.
func overrideApp(t *testing.T, rec *recorder, extra ...string) *running {
	t.Helper()
	return policyApp(t, rec, fmt.Sprintf(`
routes:
  - {group: link, pattern: "GET /l/{id}"}
  - {group: post, pattern: "POST /l/{id}"}
budgets:
  link: {burst: %d, per_client: 100, inflight: 100}
  post: {rate: 0.001, burst: 1000}
`, linkTestBurst), extra...)
}

func TestMethodOverride(t *testing.T) {
	override := []string{"X-HTTP-Method-Override: GET", "X-HTTP-Method: GET", "X-Method-Override: GET",
		"X_HTTP_Method_Override: GET"}
	t.Run("stripped by default", func(t *testing.T) {
		rec := newRecorder(t)
		r := overrideApp(t, rec)
		r.answers(t, 3*linkTestBurst, http.StatusOK, "POST", "/l/x", "", override...)
		for _, h := range override {
			name, _, _ := strings.Cut(h, ":")
			if v := headerFolded(rec.last().Header, name); v != nil {
				t.Errorf("upstream received %s: %q, want it stripped", name, v)
			}
		}
	})
	t.Run("kept, and limited as the overriding method", func(t *testing.T) {
		for _, h := range override[:3] {
			r := overrideApp(t, newRecorder(t), "--method-override")
			r.answers(t, linkTestBurst, http.StatusOK, "POST", "/l/x", "", h)
			r.rejected(t, "POST", "/l/x", "", h)
		}
		rec := newRecorder(t)
		r := limitedApp(t, rec, "--method-override")
		r.answers(t, 1, http.StatusOK, "POST", "/l/x", "", override[0], override[3])
		h := rec.last().Header
		if got := h.Get("X-HTTP-Method-Override"); got != "GET" {
			t.Errorf("X-HTTP-Method-Override: got %q, want GET kept", got)
		}
		if v := headerFolded(h, "X_HTTP_Method_Override"); len(v) != 1 {
			t.Errorf("X_HTTP_Method_Override: got %q, want only the hyphenated header kept", v)
		}
	})
}

// headerFolded returns the values of every header whose name equals name
// once underscores are read as hyphens, as CGI and WSGI servers read them.
func headerFolded(h http.Header, name string) []string {
	want := http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-"))
	var vs []string
	for k, v := range h {
		if http.CanonicalHeaderKey(strings.ReplaceAll(k, "_", "-")) == want {
			vs = append(vs, v...)
		}
	}
	return vs
}

// TestUnderscoreHeaders checks that no spelling of a forwarding header with
// underscores reaches the upstream: WSGI and CGI servers merge
// X_Forwarded_For into X-Forwarded-For.
func TestUnderscoreHeaders(t *testing.T) {
	rec := newRecorder(t)
	r := limitedApp(t, rec)
	forged := []string{"X_Forwarded_For: 198.51.100.7", "X_Real_IP: 198.51.100.7", "X_Forwarded_Proto: https",
		"X_Forwarded_Host: evil.example", "x-forwarded_for: 198.51.100.7", "Forwarded_For: 198.51.100.7",
		"X_Forwarded: for=198.51.100.7", "Client_Ip: 198.51.100.7", "True_Client_IP: 198.51.100.7"}
	r.answers(t, 1, http.StatusOK, "GET", "/u/x", "", append(forged, "X_Custom_Header: kept")...)
	h := rec.last().Header
	for _, f := range forged {
		name, _, _ := strings.Cut(f, ":")
		for _, v := range headerFolded(h, name) {
			if strings.Contains(v, "198.51.100.7") || v == "https" || v == "evil.example" {
				t.Errorf("upstream received a forged %s: %q", name, v)
			}
		}
	}
	if got := h.Values("X_custom_header"); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("X_Custom_Header: got %q, want it passed through", got)
	}
}

// TestFraming checks RFC 9112 §6.1 and §6.3: a request whose framing may be
// read two ways must not leave its connection open for a next request, so
// a body smuggled past admit's reading is never answered.
func TestFraming(t *testing.T) {
	rec := newRecorder(t)
	r := limitedApp(t, rec)
	addr := strings.TrimPrefix(r.url, "http://")
	smuggled := "GET /l/x HTTP/1.1\r\nHost: a\r\n\r\n"
	for _, tc := range []struct {
		name, request string
	}{
		{"chunked on HTTP/1.0", "POST /u/x HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(smuggled), smuggled)},
		{"Content-Length and chunked", "POST /u/x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"0\r\n\r\n" + smuggled},
		{"keep-alive HTTP/1.0", "GET /u/x HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n"},
	} {
		a := raw(t, addr, tc.request)
		if a.status != http.StatusOK || !a.closed {
			t.Errorf("%s: got %d (connection closed: %v), want 200 and a closed connection", tc.name, a.status, a.closed)
		}
		if !a.close {
			t.Errorf("%s: the answer does not say Connection: close", tc.name)
		}
	}
	if a := raw(t, addr, "GET /u/x HTTP/1.1\r\nHost: a\r\n\r\n"); a.closed {
		t.Errorf("a plain HTTP/1.1 request: the connection was closed, want it kept alive")
	}
}
