package testrouter_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// limitedAs wants the request, with body, to run r's limited handler
// exactly once for id, and returns what the app saw.
func limitedAs(t *testing.T, r *testrouter.Router, id, requestLine, body string, headers ...string) testrouter.Seen {
	t.Helper()
	r.Reset(t)
	status, got := sendBody(t, r, requestLine, body, headers...)
	if want := "limited " + id + "\n"; status != http.StatusOK || got != want {
		t.Errorf("%s: %q %q answered %d %q, want 200 %q", r.Kind, requestLine, body, status, got, want)
	}
	if n := r.Hits(t); n != 1 {
		t.Errorf("%s: %q %q: limited handler ran %d times, want 1", r.Kind, requestLine, body, n)
	}
	return r.Last(t)
}

// missesWithBody is missesLimited for a request with a body.
func missesWithBody(t *testing.T, r *testrouter.Router, status int, requestLine, body string, headers ...string) testrouter.Seen {
	t.Helper()
	r.Reset(t)
	if got, answer := sendBody(t, r, requestLine, body, headers...); got != status {
		t.Errorf("%s: %q %q answered %d %q, want %d", r.Kind, requestLine, body, got, answer, status)
	}
	if n := r.Hits(t); n != 0 {
		t.Errorf("%s: %q %q: limited handler ran %d times, want 0", r.Kind, requestLine, body, n)
	}
	return r.Last(t)
}

// bodyOf returns the headers that announce body, of type ctype ("" for
// none).
func bodyOf(ctype, body string) []string {
	h := []string{fmt.Sprintf("Content-Length: %d", len(body))}
	if ctype != "" {
		h = append(h, "Content-Type: "+ctype)
	}
	return h
}

// rackOverrides checks what Rack::MethodOverride, in front of both Rails
// and Sinatra, makes of POST /l/abc, which neither routes: the method that
// a form body's _method or X-HTTP-Method-Override names, in any case,
// becomes the routed one, but one in the query does not, since Rack reads
// _method from the form body only.
func rackOverrides(t *testing.T, r *testrouter.Router) {
	t.Helper()
	const (
		urlencoded = "application/x-www-form-urlencoded"
		multipart  = "--X\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--X--\r\n"
	)
	for _, tc := range []struct {
		ctype, body, method string
	}{
		{urlencoded, "_method=DELETE", "DELETE"},
		{urlencoded, "_method=delete", "DELETE"},
		{urlencoded, "_method=GET", "GET"},
		// Rack parses the body of a POST that names no type as a form.
		{"", "_method=DELETE", "DELETE"},
		{"multipart/form-data; boundary=X", multipart, "DELETE"},
	} {
		s := limitedAs(t, r, "abc", "POST /l/abc HTTP/1.1", tc.body, bodyOf(tc.ctype, tc.body)...)
		saw(t, r, s, tc.method, "/l/abc")
	}
	s := reachesLimited(t, r, "POST /l/abc HTTP/1.1", "X-HTTP-Method-Override: delete", "Content-Length: 0")
	saw(t, r, s, "DELETE", "/l/abc")
	body := "_method=DELETE"
	saw(t, r, missesWithBody(t, r, http.StatusNotFound, "POST /l/abc HTTP/1.1", body, bodyOf("text/plain", body)...), "POST", "/l/abc")
	saw(t, r, missesLimited(t, r, http.StatusNotFound, "POST /l/abc?_method=DELETE HTTP/1.1", "Content-Length: 0"), "POST", "/l/abc")
}

func TestRailsQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.Rails)
	saw(t, r, reachesLimited(t, r, "DELETE /l/abc HTTP/1.1"), "DELETE", "/l/abc")
	// Every route ends in an optional (.:format): the id stops at the
	// first dot, and the format is whatever one dotless word follows it,
	// known or not, in any case.
	for _, target := range []string{"/l/abc.json", "/l/abc.JSON", "/l/abc.x", "/l/abc?format=json"} {
		limitedAs(t, r, "abc", "GET "+target+" HTTP/1.1", "")
	}
	limitedAs(t, r, "a", "GET /l/a.b HTTP/1.1", "")
	limitedAs(t, r, "abc", "POST /l/abc.json HTTP/1.1", "_method=DELETE",
		bodyOf("application/x-www-form-urlencoded", "_method=DELETE")...)
	// Two formats are no route, nor is an empty one or an empty id.
	for _, target := range []string{"/l/abc.x.y", "/l/abc.", "/l/.json"} {
		missesLimited(t, r, http.StatusNotFound, "GET "+target+" HTTP/1.1")
	}
	// The route matches the undecoded path, so an encoded dot or slash is
	// part of the id, which Rails then decodes.
	limitedAs(t, r, "abc.json", "GET /l/abc%2Ejson HTTP/1.1", "")
	limitedAs(t, r, "a/b", "GET /l/a%2Fb HTTP/1.1", "")
	missesLimited(t, r, http.StatusNotFound, "GET /l%2Fabc HTTP/1.1")
	// Rails merges slashes and drops a trailing one before routing, and
	// exposes the path as sent; it resolves no dot segments and routes
	// case-sensitively.
	saw(t, r, reachesLimited(t, r, "GET //l//abc HTTP/1.1"), "GET", "//l//abc")
	saw(t, r, reachesLimited(t, r, "GET /l/abc/ HTTP/1.1"), "GET", "/l/abc/")
	for _, target := range []string{"/l/./abc", "/l/%2e%2e/l/abc", "/L/abc"} {
		missesLimited(t, r, http.StatusNotFound, "GET "+target+" HTTP/1.1")
	}
	rackOverrides(t, r)
}

func TestSinatraQuirks(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.Sinatra)
	saw(t, r, reachesLimited(t, r, "DELETE /l/abc HTTP/1.1"), "DELETE", "/l/abc")
	// Sinatra has no formats: a dot is part of the id.
	limitedAs(t, r, "abc.json", "GET /l/abc.json HTTP/1.1", "")
	limitedAs(t, r, "abc.x.y", "GET /l/abc.x.y HTTP/1.1", "")
	// Rack::Protection's PathTraversal, on by default, decodes %2e, %2f
	// and %5c, takes a backslash for a slash, resolves dot segments and
	// merges slashes; the routes match what it leaves.
	for _, target := range []string{"/l%2Fabc", "/l%5cabc", "/l\\abc", "/l/./abc", "/u/../l/abc", "/l/%2e%2e/l/abc", "//l//abc"} {
		s := reachesLimited(t, r, "GET "+target+" HTTP/1.1")
		saw(t, r, s, "GET", "/l/abc")
		if s.Raw != target {
			t.Errorf("%s: Last().Raw = %q, want %q", target, s.Raw, target)
		}
	}
	// So an encoded slash in the id makes a third segment, and a trailing
	// slash, which it keeps, is no route either.
	for _, target := range []string{"/l/a%2Fb", "/l/abc/", "/L/abc"} {
		missesLimited(t, r, http.StatusNotFound, "GET "+target+" HTTP/1.1")
	}
	rackOverrides(t, r)
}

func TestExpressQueryOverride(t *testing.T) {
	t.Parallel()
	r := testrouter.Start(t, testrouter.Express)
	saw(t, r, reachesLimited(t, r, "DELETE /l/abc HTTP/1.1"), "DELETE", "/l/abc")
	// method-override('_method') reads the query, which Rack ignores, and
	// not the body, which Rack reads.
	s := reachesLimited(t, r, "POST /l/abc?_method=DELETE HTTP/1.1", "Content-Length: 0")
	saw(t, r, s, "DELETE", "/l/abc")
	saw(t, r, reachesLimited(t, r, "POST /l/abc?_method=get HTTP/1.1", "Content-Length: 0"), "GET", "/l/abc")
	body := "_method=DELETE"
	missesWithBody(t, r, http.StatusNotFound, "POST /l/abc HTTP/1.1", body,
		bodyOf("application/x-www-form-urlencoded", body)...)
}
