package testrouter_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testneed"
	"github.com/admitgo/admit/internal/testrouter"
)

// send writes requestLine and headers to r as they are, over a connection of
// its own, so that no client normalises the target, the method or a header
// name, and returns the answer's status and body.
func send(t *testing.T, r *testrouter.Router, requestLine string, headers ...string) (int, string) {
	t.Helper()
	return sendBody(t, r, requestLine, "", headers...)
}

// sendBody is send with payload as the request's body, whose length the
// headers must give.
func sendBody(t *testing.T, r *testrouter.Router, requestLine, payload string, headers ...string) (int, string) {
	t.Helper()
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatalf("parse %q: %v", r.URL, err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", u.Host, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s\r\nHost: %s\r\nConnection: close\r\n", requestLine, u.Host)
	for _, h := range headers {
		fmt.Fprintf(&req, "%s\r\n", h)
	}
	req.WriteString("\r\n")
	req.WriteString(payload)
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatalf("%s: %q: %v", r.Kind, requestLine, err)
	}
	// The method tells ReadResponse whether a body follows (none after HEAD).
	method, _, _ := strings.Cut(requestLine, " ")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: strings.ToUpper(method)})
	if err != nil {
		t.Fatalf("%s: %q: read answer: %v", r.Kind, requestLine, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %q: read body: %v", r.Kind, requestLine, err)
	}
	return resp.StatusCode, string(body)
}

// reachesLimited wants the request to run r's limited handler for id abc
// exactly once, and returns what the app saw.
func reachesLimited(t *testing.T, r *testrouter.Router, requestLine string, headers ...string) testrouter.Seen {
	t.Helper()
	r.Reset(t)
	status, body := send(t, r, requestLine, headers...)
	if status != http.StatusOK || body != "limited abc\n" {
		t.Errorf("%s: %q answered %d %q, want 200 %q", r.Kind, requestLine, status, body, "limited abc\n")
	}
	if n := r.Hits(t); n != 1 {
		t.Errorf("%s: %q: limited handler ran %d times, want 1", r.Kind, requestLine, n)
	}
	return r.Last(t)
}

// missesLimited wants the request answered with status and the limited
// handler not run, and returns what the app saw.
func missesLimited(t *testing.T, r *testrouter.Router, status int, requestLine string, headers ...string) testrouter.Seen {
	t.Helper()
	r.Reset(t)
	got, body := send(t, r, requestLine, headers...)
	if got != status {
		t.Errorf("%s: %q answered %d %q, want %d", r.Kind, requestLine, got, body, status)
	}
	if n := r.Hits(t); n != 0 {
		t.Errorf("%s: %q: limited handler ran %d times, want 0", r.Kind, requestLine, n)
	}
	return r.Last(t)
}

// saw wants the app to have seen method and path.
func saw(t *testing.T, r *testrouter.Router, s testrouter.Seen, method, path string) {
	t.Helper()
	if s.Method != method || s.Path != path {
		t.Errorf("%s: Last() = %s %q, want %s %q", r.Kind, s.Method, s.Path, method, path)
	}
}

func TestRoutes(t *testing.T) {
	for _, kind := range testrouter.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			r := testrouter.Start(t, kind)
			if !strings.HasPrefix(r.URL, "http://127.0.0.1:") || r.Kind != kind {
				t.Fatalf("got URL %q, Kind %q; want a loopback URL and %q", r.URL, r.Kind, kind)
			}
			if s := r.Last(t); s.Method != "" || s.Header != nil {
				t.Errorf("Last() before any request = %+v, want the zero Seen", s)
			}

			saw(t, r, reachesLimited(t, r, "GET /l/abc HTTP/1.1"), "GET", "/l/abc")

			status, body := send(t, r, "GET /u/a/b HTTP/1.1", "X-Forwarded-For: 192.0.2.1")
			if status != http.StatusOK || body != "unlimited /u/a/b\n" {
				t.Errorf("GET /u/a/b answered %d %q, want 200 %q", status, body, "unlimited /u/a/b\n")
			}
			if n := r.Hits(t); n != 1 {
				t.Errorf("after GET /u/a/b: %d hits, want still 1", n)
			}
			s := r.Last(t)
			saw(t, r, s, "GET", "/u/a/b")
			if got := s.Header.Get("X-Forwarded-For"); got != "192.0.2.1" {
				t.Errorf("Last().Header X-Forwarded-For = %q, want %q", got, "192.0.2.1")
			}

			r.Reset(t)
			if n := r.Hits(t); n != 0 {
				t.Errorf("after Reset: %d hits, want 0", n)
			}
			if s := r.Last(t); s.Method != "" {
				t.Errorf("Last() after Reset = %+v, want the zero Seen", s)
			}

			saw(t, r, missesLimited(t, r, http.StatusNotFound, "GET /nowhere HTTP/1.1"), "GET", "/nowhere")
			// Two segments are not the limited route in any of the apps.
			missesLimited(t, r, http.StatusNotFound, "GET /l/abc/def HTTP/1.1")
		})
	}
}

func TestExpressQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.Express)
	// Case-insensitive routing and a forgiven trailing slash, Express's
	// defaults; req.path keeps the client's spelling.
	saw(t, r, reachesLimited(t, r, "GET /L/abc HTTP/1.1"), "GET", "/L/abc")
	saw(t, r, reachesLimited(t, r, "GET /l/abc/ HTTP/1.1"), "GET", "/l/abc/")
	// method-override turns the POST into the GET it names.
	s := reachesLimited(t, r, "POST /l/abc HTTP/1.1", "X-HTTP-Method-Override: GET", "Content-Length: 0")
	saw(t, r, s, "GET", "/l/abc")
	if got := s.Header.Get("X-HTTP-Method-Override"); got != "GET" {
		t.Errorf("Last().Header X-HTTP-Method-Override = %q, want GET", got)
	}
	// Express matches routes on the undecoded path, so an encoded slash
	// is not a separator: /l%2Fabc is one segment and no route.
	saw(t, r, missesLimited(t, r, http.StatusNotFound, "GET /l%2Fabc HTTP/1.1"), "GET", "/l%2Fabc")
}

func TestFlaskQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.Flask)
	// Werkzeug's server takes any method token and Werkzeug upper-cases
	// it, so a lowercase get is routed as GET.
	saw(t, r, reachesLimited(t, r, "get /l/abc HTTP/1.1"), "GET", "/l/abc")
	// Werkzeug's server decodes the whole path, %2F included, before
	// routing: /l%2Fabc? is /l/abc with an empty query.
	s := reachesLimited(t, r, "GET /l%2Fabc? HTTP/1.1")
	saw(t, r, s, "GET", "/l/abc")
	if s.Raw != "/l%2Fabc?" {
		t.Errorf("Last().Raw = %q, want %q", s.Raw, "/l%2Fabc?")
	}
	// An underscore header becomes the same WSGI key as the dashed one, and
	// ProxyFix trusts it as the client's address, scheme and host.
	s = reachesLimited(t, r, "GET /l/abc HTTP/1.1",
		"X_Forwarded_For: 203.0.113.9", "X_Forwarded_Proto: https", "X_Forwarded_Host: forged.example")
	if s.RemoteAddr != "203.0.113.9" || s.Scheme != "https" || s.Host != "forged.example" {
		t.Errorf("ProxyFix computed %q %q %q from underscore headers, want 203.0.113.9 https forged.example",
			s.RemoteAddr, s.Scheme, s.Host)
	}
	if got := s.Header.Get("X-Forwarded-For"); got != "203.0.113.9" {
		t.Errorf("Last().Header X-Forwarded-For = %q, want the underscore header's 203.0.113.9", got)
	}
}

func TestPrefixMuxQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.PrefixMux)
	// The old mux matches on the decoded path.
	s := reachesLimited(t, r, "GET /l%2Fabc HTTP/1.1")
	saw(t, r, s, "GET", "/l/abc")
	if s.Raw != "/l%2Fabc" {
		t.Errorf("Last().Raw = %q, want %q", s.Raw, "/l%2Fabc")
	}
	// It redirects a path with dot segments to the clean one rather than
	// routing it.
	missesLimited(t, r, http.StatusMovedPermanently, "GET /l/./abc HTTP/1.1")
	// It does not route by method; the handler accepts HEAD as well, as a
	// Go 1.22 GET pattern would.
	r.Reset(t)
	if status, _ := send(t, r, "HEAD /l/abc HTTP/1.1"); status != http.StatusOK {
		t.Errorf("HEAD /l/abc answered %d, want 200", status)
	}
	if n := r.Hits(t); n != 1 {
		t.Errorf("HEAD /l/abc: limited handler ran %d times, want 1", n)
	}
}

func TestGorillaQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.Gorilla)
	// gorilla/mux matches on the decoded path unless UseEncodedPath is set.
	s := reachesLimited(t, r, "GET /l%2Fabc HTTP/1.1")
	saw(t, r, s, "GET", "/l/abc")
	if s.Raw != "/l%2Fabc" {
		t.Errorf("Last().Raw = %q, want %q", s.Raw, "/l%2Fabc")
	}
	// It redirects a path with dot segments to the clean one unless
	// SkipClean is set.
	missesLimited(t, r, http.StatusMovedPermanently, "GET /l/./abc HTTP/1.1")
}

func TestNginxGoQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.NginxGo)
	// nginx decodes, resolves dot segments (%2e%2e among them) and merges
	// slashes before it picks a location, and sends the result on.
	for _, target := range []string{"/l/%2e%2e/l/abc", "//l//abc", "/u/../l/abc", "/l%2Fabc"} {
		s := reachesLimited(t, r, "GET "+target+" HTTP/1.1")
		saw(t, r, s, "GET", "/l/abc")
		if s.Raw != "/l/abc" {
			t.Errorf("%s: the Go app got %q, want nginx's normalised /l/abc", target, s.Raw)
		}
	}
	// nginx drops header names with an underscore before they reach the app.
	s := reachesLimited(t, r, "GET /l/abc HTTP/1.1", "X_Forwarded_For: 203.0.113.9")
	if len(s.Header) != 0 {
		t.Errorf("the Go app saw headers %v, want none: nginx drops X_Forwarded_For", s.Header)
	}
}

// fatalTB records Fatalf instead of failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs Start(kind) on a fatalTB and returns its Fatalf message.
func fatal(t *testing.T, kind testrouter.Kind) string {
	t.Helper()
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testrouter.Start(f, kind)
		t.Errorf("Start(%q) returned, want it to fail the test", kind)
	}()
	<-done
	return f.msg
}

func TestUnknownKindFails(t *testing.T) {
	if msg := fatal(t, "apache"); !strings.Contains(msg, `"apache"`) {
		t.Errorf("got Fatalf %q, want it to name the kind", msg)
	}
}

func TestMissingNodeFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(testneed.EnvRequire, "1") // a skip would end the test from Start's goroutine
	if msg := fatal(t, testrouter.Express); !strings.Contains(msg, "apt-get install nodejs") {
		t.Errorf("got Fatalf %q, want it to say what to install", msg)
	}
}
