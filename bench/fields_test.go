package bench_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/httprate"

	"github.com/admitgo/admit"
)

// TestXRateLimitFieldsAsHttprate is a differential test of admit's
// XRateLimitFields against go-chi/httprate itself: for the same limit, n
// requests a minute from one client, both answer the same statuses with
// the same X-RateLimit-* names, the same Limit and Remaining on every
// answer, and a Reset in Unix epoch seconds within the next minute, when
// the window ends. The windows' seams differ: admit's fixed windows are
// aligned to the clock, httprate's in-memory ones to when the limiter was
// made. So does Retry-After: httprate's is the whole window, admit's the
// seconds until its window ends.
func TestXRateLimitFieldsAsHttprate(t *testing.T) {
	const n = 5
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	// Keyed as the README of httprate sets it for a server with no proxy.
	key := func(r *http.Request) (string, error) {
		return httprate.CanonicalizeIP(middleware.GetClientIP(r.Context())), nil
	}
	peer := middleware.ClientIPFromRemoteAddr(httprate.LimitBy(n, time.Minute, key)(ok))
	// admit's clock stands at the start of a minute, so that its window
	// has no seam during the test.
	start := time.Now().Truncate(time.Minute).Add(time.Second)
	door, err := admit.New(admit.Config{Now: func() time.Time { return start }, Budgets: map[admit.Group]admit.Budget{
		"api": {Algorithm: admit.FixedWindow, Limit: n, Window: time.Minute, PerClient: 100,
			XRateLimit: true, FieldsOnAdmitted: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ours := door.Wrap("api", ok, nil)
	for i := range n + 2 {
		theirs, got := serve(peer), serve(ours)
		if got.Code != theirs.Code {
			t.Errorf("request %d: status %d, httprate %d", i+1, got.Code, theirs.Code)
		}
		if g, w := rateNames(got.Header()), rateNames(theirs.Header()); g != w {
			t.Errorf("request %d: fields %q, httprate %q", i+1, g, w)
		}
		for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining"} {
			if g, w := got.Header().Get(name), theirs.Header().Get(name); g != w {
				t.Errorf("request %d: %s %q, httprate %q", i+1, name, g, w)
			}
		}
		now := time.Now().Unix()
		for who, h := range map[string]http.Header{"admit": got.Header(), "httprate": theirs.Header()} {
			reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
			if err != nil || reset < start.Unix() || reset > now+60 {
				t.Errorf("request %d: %s's X-RateLimit-Reset %q, want Unix epoch seconds within the minute from %d", i+1, who, h.Get("X-RateLimit-Reset"), start.Unix())
			}
		}
	}
}

func serve(h http.Handler) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/api", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// rateNames lists the X-RateLimit-* fields of an answer, sorted.
func rateNames(h http.Header) string {
	var names []string
	for name := range h {
		if strings.HasPrefix(name, "X-Ratelimit-") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
