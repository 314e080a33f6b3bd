package server

import (
	"net/http"
	"testing"
)

func TestMayFoldOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"GET /l/{id}", "GET /l/{id}/", true},         // /l/x and /l/x/
		{"GET /l/{id}", "GET /L/{id}", true},          // case
		{"GET /l/{id}", "GET /l/special", true},       // a wildcard meets a literal
		{"GET /l/{id}", "GET /m/{id}", false},         // literals differ
		{"GET /l/{id}", "POST /l/{id}", false},        // methods differ
		{"GET /l/{id}", "HEAD /l/{id}", true},         // GET matches HEAD
		{"GET /l/{id}", "/l/{id}", true},              // no method matches every method
		{"GET /l/{id}", "GET /l/{id}/{more}", false},  // lengths differ, no rest
		{"GET /l/{id}", "GET /l/", true},              // a subtree
		{"GET /l/{id}/{x}", "GET /l/{rest...}", true}, // a rest wildcard
		{"GET a.example/l/{id}", "GET b.example/l/{id}", false},
		{"GET a.example/l/{id}", "GET /l/{id}", true},
		{"GET /", "GET /l/x", true}, // "/" matches every path
	} {
		if got := mayFoldOverlap(parsePattern(tc.a), parsePattern(tc.b)); got != tc.want {
			t.Errorf("mayFoldOverlap(%q, %q): got %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestFoldedSpellingsStackRoutes puts a route and the route of its
// trailing-slash spelling in different groups: a request matching one
// exactly is limited by both, since an upstream that ignores trailing
// slashes may route it to either.
func TestFoldedSpellingsStackRoutes(t *testing.T) {
	rec := newRecorder(t)
	r := policyApp(t, rec, `
budgets:
  a: {rate: 0.001, burst: 5}
  b: {rate: 0.001, burst: 2}
routes:
  - {group: a, pattern: "GET /l/{id}"}
  - {group: b, pattern: "GET /l/{id}/"}
  - {group: a, pattern: "GET /other/{id}"}
`)
	if got := countOK(t, 5, func() int { return get(t, r, "127.0.0.2", "/l/x") }); got != 2 {
		t.Errorf("GET /l/x: %d admitted, want b's burst, 2: the trailing-slash route's limit applies too", got)
	}
	if got := countOK(t, 6, func() int { return get(t, r, "127.0.0.3", "/other/x") }); got != 5 {
		t.Errorf("GET /other/x: %d admitted, want a's burst, 5", got)
	}
	if status := get(t, r, "127.0.0.4", "/unrouted"); status != http.StatusOK {
		t.Errorf("an unrouted path: got %d, want 200", status)
	}
}
