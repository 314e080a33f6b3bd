package h1

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// served is what net/http's server made of a request.
type served struct {
	method, requestURI, proto, host, url string
	header                               http.Header
	close                                bool
	contentLength                        int64
}

// oracle is net/http's server, reading heads from in-memory connections.
type oracle struct {
	conns chan net.Conn
	got   chan served
}

var theOracle = sync.OnceValue(func() *oracle {
	o := &oracle{conns: make(chan net.Conn), got: make(chan served, 1)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.got <- served{r.Method, r.RequestURI, r.Proto, r.Host, r.URL.String(), r.Header, r.Close, r.ContentLength}
		w.WriteHeader(http.StatusNoContent)
	}), MaxHeaderBytes: 64 << 10}
	go func() { _ = srv.Serve(chanListener(o.conns)) }()
	return o
})

type chanListener chan net.Conn

func (l chanListener) Accept() (net.Conn, error) { return <-l, nil }
func (l chanListener) Close() error              { return nil }
func (l chanListener) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// serve sends raw to net/http's server and returns what its handler saw,
// or false when the server answered without calling it.
func (o *oracle) serve(t *testing.T, raw string) (served, bool) {
	client, server := net.Pipe()
	defer client.Close()
	o.conns <- server
	go func() { _, _ = client.Write([]byte(raw)) }()
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatalf("net/http's server answered %q with no response: %v", raw, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return served{}, false
	}
	return <-o.got, true
}

// parseHead reads the head at the start of b as the engine does: whole
// says whether b holds all of it, ok whether the engine takes it.
func parseHead(b []byte) (h head, whole, ok bool) {
	size := headSize(b)
	if size < 0 {
		return head{}, false, false
	}
	h, ok = parseWhole(b[:size], new(headStore))
	return h, true, ok
}

// check holds parseHead to net/http: a head it takes must be one
// net/http's server reads to the same request.
func check(t *testing.T, raw string) (head, bool) {
	t.Helper()
	h, _, ok := parseHead([]byte(raw))
	if !ok {
		return h, false
	}
	if h.size > len(raw) || !strings.HasSuffix(raw[:h.size], "\r\n\r\n") {
		t.Fatalf("%q: size %d does not end a head", raw, h.size)
	}
	want, ok := theOracle().serve(t, raw[:h.size])
	if !ok {
		t.Fatalf("%q: taken, but net/http's server refuses it", raw)
	}
	got := served{h.method, h.target, "HTTP/1.1", h.host, h.url.String(), h.header, h.close, 0}
	if len(got.header) == 0 && len(want.header) == 0 {
		got.header = want.header
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", raw, got, want)
	}
	return h, true
}

func TestParseHead(t *testing.T) {
	tests := []struct {
		raw  string
		take bool
	}{
		{"GET /l/x HTTP/1.1\r\nHost: example.com\r\n\r\n", true},
		{"GET /l/x?a=1&b=%2F HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n", true},
		{"DELETE /x HTTP/1.1\r\nhost: a\r\nx-forwarded-for: 1.2.3.4\r\nX-Forwarded-For:  5.6.7.8 \t\r\n\r\n", true},
		{"GET //x/../y HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", true},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive\r\nEmpty:\r\n\r\nGET /y HTTP/1.1\r\n", true},
		{"GET /x HTTP/1.1\r\nHost:\r\n\r\n", true},
		// net/http's to read or refuse:
		{"GET /x HTTP/1.1\r\nHost: a\r\n", false},                           // incomplete
		{"GET /x HTTP/1.0\r\nHost: a\r\n\r\n", false},                       // HTTP/1.0
		{"GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n", false},               // absolute form
		{"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", false},                    // asterisk
		{"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", false},                // authority
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false},                         // HTTP/2
		{"GET /x HTTP/1.1\r\n\r\n", false},                                  // no Host
		{"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false},            // two
		{"GET /x HTTP/1.1\r\nHost: a b\r\n\r\n", false},                     // malformed Host
		{"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", false}, // framing
		{"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"GET /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", false},
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false},
		{"GET /x HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n", false},
		{"GET /x HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", false},     // obs-fold
		{"GET /x HTTP/1.1\nHost: a\n\n", false},                         // bare LF
		{"GET /x HTTP/1.1\r\nHost: a\r\nX : b\r\n\r\n", false},          // space before colon
		{"GET /x HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n", false}, // not ASCII
		{"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", false},         // not ASCII
		{"GET /x HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", false},      // NUL
		{"GET  /x HTTP/1.1\r\nHost: a\r\n\r\n", false},                  // two spaces
		{"GET /x HTTP/1.1 \r\nHost: a\r\n\r\n", false},                  // trailing space
		{"G(T /x HTTP/1.1\r\nHost: a\r\n\r\n", false},                   // method not a token
		{"GET /x HTTP/1.1\r\nHost: a\r\nX-A_b.c~: d\r\n\r\n", true},     // odd but token
		// More fields than the writer holds values for, one repeated.
		{"GET /x?q HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\nG: 7\r\nH: 8\r\nA: 9\r\nI: 10\r\n\r\n", true},
		{"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", false}, // ParseRequestURI refuses it
		{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close, x\r\n\r\n", false},
	}
	for _, tt := range tests {
		if _, took := check(t, tt.raw); took != tt.take {
			t.Errorf("%q: taken %v, want %v", tt.raw, took, tt.take)
		}
	}
}

// FuzzHead holds every head parseHead takes to net/http's server's reading
// of the same bytes.
func FuzzHead(f *testing.F) {
	f.Add("GET /l/x HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\n\r\n")
	f.Add("GET /a/%2e%2E/b?c=d#e HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\nCookie: a=b\r\nCookie: c\r\n\r\n")
	f.Add("HEAD /x HTTP/1.1\r\nHOST: a\r\nx-Y-z: \t1\t\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		check(t, raw)
	})
}

// FuzzTarget holds parseTarget to url.ParseRequestURI on every target
// requestLine takes.
func FuzzTarget(f *testing.F) {
	// Plain paths, queries, a lone and a repeated '?', escapes, bytes a
	// path escapes, an empty query with more after it, a '//' authority.
	for _, s := range []string{"/l/x", "/a?b=c&d", "/a?", "/a?b?", "/a??", "/%41", "/a!b", "/a*(b)", "/?", "//x/y", "/a b", "/a%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if _, got, ok := requestLine("GET " + target + " HTTP/1.1"); !ok || got != target {
			return
		}
		u, ok := parseTarget(target, new(url.URL))
		want, err := url.ParseRequestURI(target)
		if ok != (err == nil) {
			t.Fatalf("%q: taken %v, ParseRequestURI's error %v", target, ok, err)
		}
		if ok && !reflect.DeepEqual(u, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", target, u, want)
		}
	})
}

// BenchmarkParseWhole reads the heads a flood and a browser send.
func BenchmarkParseWhole(b *testing.B) {
	heads := []struct{ name, head string }{
		{"wrk", "GET /l/abc HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"},
		{"browser", "GET /l/abc?ref=mail HTTP/1.1\r\nHost: example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
			"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\n" +
			"Accept-Encoding: gzip, deflate, br\r\nConnection: keep-alive\r\nUpgrade-Insecure-Requests: 1\r\n\r\n"},
	}
	for _, h := range heads {
		b.Run(h.name, func(b *testing.B) {
			raw := []byte(h.head)
			var st headStore
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := parseWhole(raw[:headSize(raw)], &st); !ok {
					b.Fatal("not taken")
				}
			}
		})
	}
}
