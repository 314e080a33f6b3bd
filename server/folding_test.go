package server

import (
	"net/http"
	"testing"
)

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

// TestFoldedSpellingsStackBeyondEight: a request matching two routes whose
// groups together number more than a route may stack is limited by every
// one of them, the last too, not by the first eight.
func TestFoldedSpellingsStackBeyondEight(t *testing.T) {
	rec := newRecorder(t)
	r := policyApp(t, rec, `
budgets:
  g1: {rate: 0.001, burst: 50}
  g2: {rate: 0.001, burst: 50}
  g3: {rate: 0.001, burst: 50}
  g4: {rate: 0.001, burst: 50}
  g5: {rate: 0.001, burst: 50}
  g6: {rate: 0.001, burst: 50}
  g7: {rate: 0.001, burst: 50}
  g8: {rate: 0.001, burst: 50}
  g9: {rate: 0.001, burst: 2}
routes:
  - {group: [g1, g2, g3, g4, g5], pattern: "GET /l/{id}"}
  - {group: [g6, g7, g8, g9], pattern: "GET /l/{id}/"}
`)
	if got := countOK(t, 5, func() int { return get(t, r, "127.0.0.2", "/l/x") }); got != 2 {
		t.Errorf("GET /l/x: %d admitted, want g9's burst, 2: the ninth group's limit applies too", got)
	}
	if got := countOK(t, 5, func() int { return get(t, r, "127.0.0.3", "/l/y/") }); got != 2 {
		t.Errorf("GET /l/y/: %d admitted, want g9's burst, 2", got)
	}
}
