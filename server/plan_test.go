package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/server/internal/config"
)

// TestPlan makes the front's plan of requests without a listener: the
// canonical request, the routes matched (in every spelling the app would
// route alike), the path values their limits key by (and only those), and
// the combined limits and cost, as the server serves them and explain
// prints them.
func TestPlan(t *testing.T) {
	path := writeConfig(t, `budgets:
  tenant: {like: link, key: "path:tenant"}
  upload: {like: webhook, key: "path:id"}
routes:
  - {group: [link, tenant], pattern: "GET /t/{tenant}/docs/{doc}"}
  - {group: [webhook, upload, tenant], pattern: "POST /t/{tenant}/up/{id}", cost: 3}
  - {group: link, pattern: "GET /Files/{id}/"}
  - {group: webhook, pattern: "GET /files/{id}"}
`)
	f := frontOf(t, path)
	for _, tc := range []struct {
		method, target string
		canonical      string   // the request's target as forwarded
		patterns       []string // the routes matched, in order
		groups         []admit.Group
		cost           int
		values         map[string]string
		err            error
	}{
		{"GET", "/t/acme/docs/1", "/t/acme/docs/1", []string{"GET /t/{tenant}/docs/{doc}"}, []admit.Group{"link", "tenant"}, 1,
			map[string]string{"tenant": "acme"}, nil},
		{"GET", "/t/acme/./docs/%31", "/t/acme/docs/1", []string{"GET /t/{tenant}/docs/{doc}"}, []admit.Group{"link", "tenant"}, 1,
			map[string]string{"tenant": "acme"}, nil},
		{"POST", "/t/acme/up/7", "/t/acme/up/7", []string{"POST /t/{tenant}/up/{id}"}, []admit.Group{"webhook", "upload", "tenant"}, 3,
			map[string]string{"tenant": "acme", "id": "7"}, nil},
		// Folding: both routes are this request in some spelling, so both
		// limits apply; neither keys by a path value, so none is set.
		{"GET", "/files/X", "/files/X", []string{"GET /files/{id}", "GET /Files/{id}/"}, []admit.Group{"webhook", "link"}, 1,
			map[string]string{"id": ""}, nil},
		{"GET", "/other", "/other", nil, nil, 0, nil, nil},
		{"GET", "/t/acme/docs/a%2Fb", "", nil, nil, 0, nil, canon.ErrEncodedSlash},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		p, err := f.plan(r)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s %s: error %v, want %v", tc.method, tc.target, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if p.req.RequestURI != tc.canonical {
			t.Errorf("%s %s: canonical %q, want %q", tc.method, tc.target, p.req.RequestURI, tc.canonical)
		}
		var patterns []string
		for _, m := range p.matched {
			patterns = append(patterns, f.routes[m.Route].r.Pattern)
		}
		if !slices.Equal(patterns, tc.patterns) {
			t.Errorf("%s %s: matched %q, want %q", tc.method, tc.target, patterns, tc.patterns)
		}
		if !slices.Equal(p.route.Groups, tc.groups) || len(tc.groups) > 0 && max(p.route.Cost, 1) != tc.cost {
			t.Errorf("%s %s: limits %v cost %d, want %v cost %d", tc.method, tc.target, p.route.Groups, p.route.Cost, tc.groups, tc.cost)
		}
		for name, want := range tc.values {
			if got := p.req.PathValue(name); got != want {
				t.Errorf("%s %s: path value %s %q, want %q", tc.method, tc.target, name, got, want)
			}
		}
		if len(tc.patterns) > 0 && p.req.Pattern != tc.patterns[0] {
			t.Errorf("%s %s: the access log's pattern %q, want the first route's, %q", tc.method, tc.target, p.req.Pattern, tc.patterns[0])
		}
	}
}

// frontOf returns the front of the config file at path, over a door of its
// budgets closed when t ends, whose routes answer nothing: for tests of
// what the front decides, not of what it forwards.
func frontOf(t *testing.T, path string) *front {
	t.Helper()
	cfg, err := parse(t, []string{"--config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	door, err := cfg.Door()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { door.Close() })
	none := http.NotFoundHandler()
	f, err := newFront(cfg, door, none, nil, new(malformedCounts), func(config.Route) (http.Handler, http.Handler) { return none, nil })
	if err != nil {
		t.Fatal(err)
	}
	return f
}
