package main

import (
	"net/http"
	"slices"
	"testing"
)

// TestUnderscoreSpellingOfKeyHeader checks that a spelling of a key header
// with underscores, which CGI and WSGI servers merge with the header itself,
// is dropped before the request is keyed: the app must read the value admit
// keyed by, not one admit never saw.
func TestUnderscoreSpellingOfKeyHeader(t *testing.T) {
	rec := newRecorder(t)
	r := policyApp(t, rec, `
budgets:
  per-key: {rate: 0.001, burst: 2, key: "header:X-Api-Key", key_authenticated: true, per_client: 100, inflight: 100}
routes:
  - {group: per-key, pattern: "GET /api/{x}"}
`)
	for _, tc := range []struct {
		name    string
		path    string
		headers []string
		want    []string // the values of X-Api-Key, in any spelling, the upstream receives
	}{
		{"beside the header", "/api/x", []string{"X-Api-Key: fresh", "X_Api_Key: real", "x_api-key: real"}, []string{"fresh"}},
		{"alone", "/api/x", []string{"X_API_KEY: real"}, nil},
		{"on an unrouted path", "/other", []string{"X-Api-Key: fresh", "X_Api_Key: real"}, []string{"fresh"}},
	} {
		if st := get(t, r, "127.0.0.2", tc.path, append(tc.headers, "X_Other_Header: kept")...); st != http.StatusOK {
			t.Fatalf("%s: got %d, want 200", tc.name, st)
		}
		h := rec.last().Header
		if got := headerFolded(h, "X-Api-Key"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: upstream received X-Api-Key spellings %q, want %q", tc.name, got, tc.want)
		}
		if got := h.Values("X_other_header"); !slices.Equal(got, []string{"kept"}) {
			t.Errorf("%s: X_Other_Header: got %q, want it passed through", tc.name, got)
		}
	}
	// The key's budget holds whatever underscore spelling rides along.
	r.answers(t, 1, http.StatusOK, "GET", "/api/x", "", "X-Api-Key: one", "X_Api_Key: a")
	r.answers(t, 1, http.StatusOK, "GET", "/api/x", "", "X-Api-Key: one", "X_Api_Key: b")
	r.rejected(t, "GET", "/api/x", "", "X-Api-Key: one", "X_Api_Key: c")
}
