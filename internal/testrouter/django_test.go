package testrouter_test

import (
	"net/http"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// TestDjango holds the Django app to what its kind promises: its function
// views run for any method CsrfViewMiddleware lets through, the
// @csrf_exempt one for every method, and the routes of the package
// documentation as the other kinds serve them.
func TestDjango(t *testing.T) {
	r := testrouter.Start(t, testrouter.Django)
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "TRACE"} {
		saw(t, r, reachesView(t, r, m+" /l/abc HTTP/1.1"), m, "/l/abc")
	}
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "FOO"} {
		missesLimited(t, r, http.StatusForbidden, m+" /l/abc HTTP/1.1", "Content-Length: 0") // CSRF
	}
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO"} {
		saw(t, r, reachesView(t, r, m+" /w/abc HTTP/1.1", "Content-Length: 0"), m, "/w/abc")
	}
	status, body := send(t, r, "GET /u/a/b HTTP/1.1", "X-Forwarded-For: 192.0.2.1")
	if status != http.StatusOK || body != "unlimited /u/a/b\n" {
		t.Errorf("GET /u/a/b answered %d %q, want 200 %q", status, body, "unlimited /u/a/b\n")
	}
	if got := r.Last(t).Header.Get("X-Forwarded-For"); got != "192.0.2.1" {
		t.Errorf("Last().Header X-Forwarded-For = %q, want %q", got, "192.0.2.1")
	}
	saw(t, r, missesLimited(t, r, http.StatusNotFound, "GET /nowhere HTTP/1.1"), "GET", "/nowhere")
	missesLimited(t, r, http.StatusNotFound, "GET /l/abc/def HTTP/1.1")
}

// reachesView wants the request to run a limited view once; HEAD's answer
// has no body to check.
func reachesView(t *testing.T, r *testrouter.Router, requestLine string, headers ...string) testrouter.Seen {
	t.Helper()
	r.Reset(t)
	status, body := send(t, r, requestLine, headers...)
	if status != http.StatusOK || body != "limited abc\n" && body != "" {
		t.Errorf("%q answered %d %q, want 200 %q", requestLine, status, body, "limited abc\n")
	}
	if n := r.Hits(t); n != 1 {
		t.Errorf("%q: the view ran %d times, want 1", requestLine, n)
	}
	return r.Last(t)
}
