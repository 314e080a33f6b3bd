package testrouter_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testrouter"
)

// The quirks of the Tomcat and PHP kinds and of the kinds with nginx
// decoding in front of an app, in a file of their own, as the Rack kinds
// have, so that testrouter_test.go stays short.

func TestTomcatQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.Tomcat)
	saw(t, r, reachesLimited(t, r, "DELETE /l/abc HTTP/1.1"), "DELETE", "/l/abc")
	// Tomcat drops the ;parameters of every segment, then decodes, resolves
	// dot segments and merges slashes before it maps the path; the servlet
	// sees the result, and the request URI as it was sent.
	for _, target := range []string{
		"/l;x/abc", "/;x/l/abc", "/x/..;/l/abc", "/l/.;/abc", "/l/abc;jsessionid=1",
		"/l/%2e%2e/l/abc", "/u/../l/abc", "//l//abc", "/%6c/abc",
	} {
		s := reachesLimited(t, r, "GET "+target+" HTTP/1.1")
		saw(t, r, s, "GET", "/l/abc")
		if s.Raw != target {
			t.Errorf("%s: Last().Raw = %q, want %q", target, s.Raw, target)
		}
	}
	// An encoded ';' is decoded after the parameters are gone: a character
	// of the segment.
	saw(t, r, missesLimited(t, r, http.StatusNotFound, "GET /l%3Bx/abc HTTP/1.1"), "GET", "/l;x/abc")
	limitedAs(t, r, "abc;x", "GET /l/abc%3Bx HTTP/1.1", "")
	// An encoded slash Tomcat refuses before any servlet sees the request.
	if s := missesLimited(t, r, http.StatusBadRequest, "GET /l%2Fabc HTTP/1.1"); s.Method != "" {
		t.Errorf("the servlet saw %s %q, want nothing: Tomcat refuses %%2F", s.Method, s.Path)
	}
	missesLimited(t, r, http.StatusNotFound, "GET /L/abc HTTP/1.1")
	missesLimited(t, r, http.StatusNotFound, "GET /l/abc/ HTTP/1.1")
	missesLimited(t, r, http.StatusMethodNotAllowed, "POST /l/abc HTTP/1.1", "Content-Length: 0")
}

func TestPHPQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.PHP)
	saw(t, r, reachesLimited(t, r, "DELETE /l/abc HTTP/1.1"), "DELETE", "/l/abc")
	// HttpFoundation takes the path info from behind the front
	// controller's name, and Symfony Routing decodes it, %2F included,
	// before it matches.
	for _, target := range []string{"/index.php/l/abc", "/l%2Fabc", "/%6c/abc", "/index.php/l%2Fabc"} {
		s := reachesLimited(t, r, "GET "+target+" HTTP/1.1")
		saw(t, r, s, "GET", "/l/abc")
		if s.Raw != target {
			t.Errorf("%s: Last().Raw = %q, want %q", target, s.Raw, target)
		}
	}
	// It resolves no dot segments, merges no slashes, reads no
	// ;parameters, keeps a trailing slash and routes case-sensitively.
	for _, target := range []string{"/l/./abc", "//l//abc", "/l;x/abc", "/l/abc/", "/L/abc", "/l/a%2Fb"} {
		missesLimited(t, r, http.StatusNotFound, "GET "+target+" HTTP/1.1")
	}
	saw(t, r, missesLimited(t, r, http.StatusOK, "GET /u/../l/abc HTTP/1.1"), "GET", "/u/../l/abc")
	// With the override enabled, a POST is routed as the method that its
	// form body's or its query's _method names, in any case, or its
	// X-HTTP-Method-Override header, which PHP's server also reads from
	// X_HTTP_Method_Override, folding "_" and "-" into one name.
	const urlencoded = "application/x-www-form-urlencoded"
	for _, tc := range []struct{ ctype, body, method string }{
		{urlencoded, "_method=DELETE", "DELETE"},
		{urlencoded, "_method=delete", "DELETE"},
		{urlencoded, "_method=GET", "GET"},
		{"multipart/form-data; boundary=X", "--X\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--X--\r\n", "DELETE"},
	} {
		saw(t, r, limitedAs(t, r, "abc", "POST /l/abc HTTP/1.1", tc.body, bodyOf(tc.ctype, tc.body)...), tc.method, "/l/abc")
	}
	for _, header := range []string{"X-HTTP-Method-Override: DELETE", "X_HTTP_Method_Override: delete"} {
		saw(t, r, reachesLimited(t, r, "POST /l/abc HTTP/1.1", header, "Content-Length: 0"), "DELETE", "/l/abc")
	}
	saw(t, r, reachesLimited(t, r, "POST /l/abc?_method=DELETE HTTP/1.1", "Content-Length: 0"), "DELETE", "/l/abc")
	body := "_method=DELETE"
	limitedAs(t, r, "abc", "POST /index.php/l/abc HTTP/1.1", body, bodyOf(urlencoded, body)...)
	// PHP parses no body of another type, and Symfony overrides POST only.
	saw(t, r, missesWithBody(t, r, http.StatusMethodNotAllowed, "POST /l/abc HTTP/1.1", body, bodyOf("text/plain", body)...), "POST", "/l/abc")
	saw(t, r, missesWithBody(t, r, http.StatusMethodNotAllowed, "PUT /l/abc?_method=DELETE HTTP/1.1", body, bodyOf(urlencoded, body)...), "PUT", "/l/abc")
}

func TestNginxDecodeTomcatQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.NginxDecodeTomcat)
	// nginx decodes %3B and sends the ';' on unencoded, where Tomcat takes
	// it for the start of a parameter; alone, Tomcat keeps an encoded ';'
	// in the segment.
	for target, sent := range map[string]string{
		"/l%3Bx/abc":            "/l;x/abc",
		"/%3Bx/l/abc":           "/;x/l/abc",
		"/x/..%3B/l/abc":        "/x/..;/l/abc",
		"/l/abc%3Bjsessionid=1": "/l/abc;jsessionid=1",
		// nginx resolves the dot segments it decoded, and Tomcat those its
		// parameters hid from nginx.
		"/l/.%3B/abc": "/l/.;/abc",
		// And an encoded slash, which Tomcat refuses, nginx decodes.
		"/l%2Fabc": "/l/abc",
	} {
		s := reachesLimited(t, r, "GET "+target+" HTTP/1.1")
		saw(t, r, s, "GET", "/l/abc")
		if s.Raw != sent {
			t.Errorf("%s: nginx sent %q, want %q", target, s.Raw, sent)
		}
	}
	// nginx encodes a '%' again, so what the client encoded twice Tomcat
	// decodes once.
	saw(t, r, missesLimited(t, r, http.StatusNotFound, "GET /%256c/abc HTTP/1.1"), "GET", "/%6c/abc")
}

func TestNginxDecodeFlaskQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.NginxDecodeFlask)
	// nginx sends $uri decoded and not encoded again, and Werkzeug decodes
	// it once more: what the client encoded twice reaches the route.
	for target, sent := range map[string]string{
		"/l%252Fabc": "/l%2Fabc",
		"/%256c/abc": "/%6c/abc",
		"/l/%2561bc": "/l/%61bc",
		"/l%2Fabc":   "/l/abc",
		// A decoded '?' or '#' ends the path Werkzeug reads.
		"/l/abc%3Fx": "/l/abc?x",
		"/l/abc%23x": "/l/abc#x",
	} {
		s := reachesLimited(t, r, "GET "+target+" HTTP/1.1")
		saw(t, r, s, "GET", "/l/abc")
		if s.Raw != sent {
			t.Errorf("%s: nginx sent %q, want %q", target, s.Raw, sent)
		}
	}
	// nginx resolved the dot segments before Werkzeug's decoding made
	// these, and Werkzeug resolves none.
	saw(t, r, missesLimited(t, r, http.StatusNotFound, "GET /l/%252e%252e/l/abc HTTP/1.1"), "GET", "/l/../l/abc")
	// Nor does it at a path's end: /l%2F. and /l%2F.. reach the route with
	// the ids "." and "..".
	for _, id := range []string{".", ".."} {
		target := "/l%252F" + id
		r.Reset(t)
		if status, body := send(t, r, "GET "+target+" HTTP/1.1"); status != http.StatusOK || body != "limited "+id+"\n" {
			t.Errorf("%s: %s answered %d %q, want the limited handler for the id %q", r.Kind, target, status, body, id)
		}
		if n := r.Hits(t); n != 1 {
			t.Errorf("%s: %s: limited handler ran %d times, want 1", r.Kind, target, n)
		}
		if s := r.Last(t); s.Raw != "/l%2F"+id {
			t.Errorf("%s: %s: nginx sent %q, want %q", r.Kind, target, s.Raw, "/l%2F"+id)
		}
	}
	// A decoded CR LF ends nginx's request line to Flask early: Werkzeug
	// takes "GET /l/abc" for an HTTP/0.9 request, answers with a bare body,
	// and reads the rest of the client's path as headers, which ProxyFix
	// trusts.
	r.Reset(t)
	const smuggled = "/l/abc%0D%0AX-Forwarded-For:%20203.0.113.9%0D%0AX:"
	if got := rawAnswer(t, r, "GET "+smuggled+" HTTP/1.1"); got != "limited abc\n" {
		t.Errorf("%s answered %q, want the bare body %q", smuggled, got, "limited abc\n")
	}
	if n := r.Hits(t); n != 1 {
		t.Errorf("%s: limited handler ran %d times, want 1", smuggled, n)
	}
	if s := r.Last(t); s.Raw != "/l/abc" || s.RemoteAddr != "203.0.113.9" {
		t.Errorf("%s: Flask saw %q from %q, want /l/abc from the smuggled 203.0.113.9", smuggled, s.Raw, s.RemoteAddr)
	}
}

// rawAnswer sends requestLine to r and returns all it answers, for answers
// that are no HTTP/1.x response.
func rawAnswer(t *testing.T, r *testrouter.Router, requestLine string) string {
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
	if _, err := fmt.Fprintf(conn, "%s\r\nHost: %s\r\nConnection: close\r\n\r\n", requestLine, u.Host); err != nil {
		t.Fatalf("%s: %q: %v", r.Kind, requestLine, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("%s: %q: read answer: %v", r.Kind, requestLine, err)
	}
	return string(b)
}
