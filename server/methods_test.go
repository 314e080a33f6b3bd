package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/admitgo/admit"
)

// sendFrom sends method path from local address from with headers ("Name:
// value") and returns the status.
func sendFrom(t *testing.T, r *running, from, method, path string, headers ...string) int {
	t.Helper()
	req := method + " " + path + " HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 0\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	return rawFrom(t, from, strings.TrimPrefix(r.url, "http://"), req+"\r\n").status
}

// methodsPolicy limits GET /l/{id} to a burst of 2, and /two/{x} by one
// group under GET and another under DELETE.
const methodsPolicy = `
budgets:
  a: {rate: 0.001, burst: 2}
  b: {rate: 0.001, burst: 5}
  c: {rate: 0.001, burst: 3}
routes:
  - {group: a, pattern: "GET /l/{id}"}
  - {group: b, pattern: "GET /two/{x}"}
  - {group: c, pattern: "DELETE /two/{x}"}
  - {group: a, pattern: "GET /s/{id}", strict_methods: true}
`

// TestUnnamedMethodsHeldToTheRoute sends every method to a path whose
// route names GET alone: an app whose view runs for any method (a Django
// function view) serves each, so each is held to the route's limit, or
// refused when it is not a method admit forwards.
func TestUnnamedMethodsHeldToTheRoute(t *testing.T) {
	r := policyApp(t, newRecorder(t), methodsPolicy)
	for i, method := range []string{"GET", "HEAD", "POST", "PUT", "OPTIONS", "PATCH", "DELETE"} {
		from := "127.0.1." + string(rune('1'+i))
		if got := countOK(t, 5, func() int { return sendFrom(t, r, from, method, "/l/x") }); got != 2 {
			t.Errorf("%s /l/x: %d of 5 admitted, want a's burst, 2", method, got)
		}
	}
	for _, tc := range []struct {
		method string
		want   int
	}{
		{"FOO", http.StatusNotImplemented},
		{"TRACE", http.StatusNotImplemented},
		{"get", http.StatusBadRequest},
		{"CONNECT", http.StatusBadRequest},
	} {
		if got := sendFrom(t, r, "127.0.2.1", tc.method, "/l/x"); got != tc.want {
			t.Errorf("%s /l/x: got %d, want %d", tc.method, got, tc.want)
		}
	}
	// Two routes on one path: a method neither names is held to both,
	// a method one names to that one alone.
	for _, tc := range []struct {
		from, method string
		want         int
	}{
		{"127.0.3.1", "POST", 3},
		{"127.0.3.2", "GET", 5},
		{"127.0.3.3", "DELETE", 3},
	} {
		if got := countOK(t, 6, func() int { return sendFrom(t, r, tc.from, tc.method, "/two/x") }); got != tc.want {
			t.Errorf("%s /two/x: %d of 6 admitted, want %d", tc.method, got, tc.want)
		}
	}
	// A strict route holds its own method alone.
	if got := countOK(t, 5, func() int { return sendFrom(t, r, "127.0.4.1", "POST", "/s/x") }); got != 5 {
		t.Errorf("POST /s/x, a strict route's path: %d of 5 admitted, want all", got)
	}
	if got := countOK(t, 5, func() int { return sendFrom(t, r, "127.0.4.2", "GET", "/s/x") }); got != 2 {
		t.Errorf("GET /s/x: %d of 5 admitted, want a's burst, 2", got)
	}
	if got := r.scrapeCount(t, `admit_server_malformed_total{admit_server_reason="method_not_served"`); got != 2 {
		t.Errorf("method_not_served refusals counted: %d, want 2", got)
	}
}

// TestMethodsOptionWidens forwards a method --methods adds, held to the
// routes like any other, and refuses one it leaves out.
func TestMethodsOptionWidens(t *testing.T) {
	r := policyApp(t, newRecorder(t), methodsPolicy, "--methods", "GET,HEAD,POST,PROPFIND")
	if got := countOK(t, 5, func() int { return sendFrom(t, r, "127.0.1.1", "PROPFIND", "/l/x") }); got != 2 {
		t.Errorf("PROPFIND /l/x: %d of 5 admitted, want a's burst, 2", got)
	}
	if got := sendFrom(t, r, "127.0.1.2", "PUT", "/l/x"); got != http.StatusNotImplemented {
		t.Errorf("PUT, left out of --methods: got %d, want 501", got)
	}
}

// TestPreflightKeyedByClient sends CORS preflights to a route keyed by a
// header that a request without it is refused for: a browser never sends
// credentials on a preflight, so it is keyed by its client instead, and
// held to the limit; an OPTIONS that is no preflight is refused as
// missing its key.
func TestPreflightKeyedByClient(t *testing.T) {
	r := policyApp(t, newRecorder(t), `
budgets:
  token: {rate: 0.001, burst: 2, key: "header:X-Api-Key", on_missing: reject, key_authenticated: true}
routes:
  - {group: token, pattern: "GET /api/{x}"}
`)
	preflight := []string{"Origin: https://app.example", "Access-Control-Request-Method: GET"}
	statuses := make([]int, 4)
	for i := range statuses {
		statuses[i] = sendFrom(t, r, "127.0.1.1", "OPTIONS", "/api/x", preflight...)
	}
	if want := []int{200, 200, 429, 429}; !slices.Equal(statuses, want) {
		t.Errorf("preflights from one client: %v, want %v", statuses, want)
	}
	if got := sendFrom(t, r, "127.0.1.2", "OPTIONS", "/api/x", "Origin: https://app.example"); got != http.StatusBadRequest {
		t.Errorf("OPTIONS with Origin alone, no preflight: got %d, want 400 for the missing key", got)
	}
	if got := sendFrom(t, r, "127.0.1.3", "GET", "/api/x", preflight...); got != http.StatusBadRequest {
		t.Errorf("GET with the preflight's headers: got %d, want 400 for the missing key", got)
	}
}

// TestUnnamedMethodStacksGroupsOnce: a request held to two routes that
// share a group takes that group once, so its in-flight cap is taken once.
func TestUnnamedMethodStacksGroupsOnce(t *testing.T) {
	path := writeConfig(t, `budgets:
  a: {rate: 0.001, burst: 5, inflight: 1}
  b: {rate: 0.001, burst: 5}
routes:
  - {group: [a, b], pattern: "GET /two/{x}"}
  - {group: [b, a], pattern: "DELETE /two/{x}"}
`)
	f := frontOf(t, path)
	req, _ := http.NewRequest("POST", "http://a/two/x", nil)
	req.RequestURI = "/two/x"
	p, err := f.plan(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := []admit.Group{"a", "b"}; !slices.Equal(p.route.Groups, want) {
		t.Errorf("POST /two/x: groups %v, want %v, each once", p.route.Groups, want)
	}
}

// TestExplainSaysWhyAMethodIsLimited: explain names the method no route
// names, and the status a method admit does not forward is refused with.
func TestExplainSaysWhyAMethodIsLimited(t *testing.T) {
	out, err := runArgs(t, nil, "explain", "--peer", "192.0.2.1:1", "--demo", "POST", "/l/abc")
	if err != nil {
		t.Fatal(err)
	}
	if want := "matched  as GET (no route names POST on this path"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	out, err = runArgs(t, nil, "explain", "--peer", "192.0.2.1:1", "--demo", "TRACE", "/l/abc")
	if err != nil {
		t.Fatal(err)
	}
	if want := "refused  501 Not Implemented: "; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestOverrideToAnUnservedMethod refuses a method override that names a
// method admit does not forward, as the request line naming it would be.
func TestOverrideToAnUnservedMethod(t *testing.T) {
	r := policyApp(t, newRecorder(t), methodsPolicy, "--method-override")
	if got := sendFrom(t, r, "127.0.1.1", "POST", "/l/x", "X-HTTP-Method-Override: TRACE"); got != http.StatusNotImplemented {
		t.Errorf("POST overridden to TRACE: got %d, want 501", got)
	}
	if got := sendFrom(t, r, "127.0.1.2", "POST", "/l/x", "X-HTTP-Method-Override: PUT"); got != http.StatusOK {
		t.Errorf("POST overridden to PUT: got %d, want 200", got)
	}
}
