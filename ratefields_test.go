package admit

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestRefusalFieldsByDefault: a rate_limited refusal carries its group's
// rate-limit fields without any setting, in the family the group names,
// and an in-flight refusal carries none.
func TestRefusalFieldsByDefault(t *testing.T) {
	clk := newClock()
	tests := []struct {
		xRateLimit bool
		want       map[string]string // "" : absent
	}{
		{false, map[string]string{"RateLimit-Policy": `"link";q=20;w=20`, "RateLimit": `"link";r=0;t=1`, "X-RateLimit-Limit": ""}},
		{true, map[string]string{"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset": strconv.FormatInt(clk.Now().Unix()+1, 10), "RateLimit": ""}},
	}
	for _, tt := range tests {
		b := DefaultBudgets()[GroupLink]
		b.XRateLimit = tt.xRateLimit
		h := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupLink: b}}).Wrap(GroupLink, status(http.StatusOK), nil)
		for range b.Burst {
			if w := do(h, "GET", "192.0.2.1:1"); w.Header().Get("RateLimit") != "" || w.Header().Get("X-RateLimit-Limit") != "" {
				t.Errorf("XRateLimit %v: an admitted answer carries them without FieldsOnAdmitted: %v", tt.xRateLimit, w.Header())
			}
		}
		w := rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "1")
		for name, want := range tt.want {
			if got := w.Header().Get(name); got != want {
				t.Errorf("XRateLimit %v, refused: %s: got %q, want %q", tt.xRateLimit, name, got, want)
			}
		}
	}
	// The client cap: a 429 that says nothing of tokens.
	d := newDoor(t, clk, Config{})
	b := newBlocker(http.StatusOK)
	h := d.Wrap(GroupLink, b, nil)
	release := hold(t, h, b, "192.0.2.9:1", defaults[GroupLink].PerClient)
	defer release()
	if w := rejected(t, h, "192.0.2.9:1", http.StatusTooManyRequests, "1"); w.Header().Get("RateLimit") != "" {
		t.Errorf("client_concurrency: RateLimit %q, want none", w.Header().Get("RateLimit"))
	}
}

// TestFieldsOnAdmitted: a group that sends its fields on admitted answers
// reports what is left, httprate's Reset in epoch seconds, and leaves a
// field the handler's answer set itself as it is.
func TestFieldsOnAdmitted(t *testing.T) {
	clk := newClock()
	b := DefaultBudgets()[GroupLink]
	b.XRateLimit, b.FieldsOnAdmitted = true, true
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupLink: b}})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	w := do(h, "GET", "192.0.2.1:1")
	want := map[string]string{"X-RateLimit-Limit": "20", "X-RateLimit-Remaining": "19",
		"X-RateLimit-Reset": strconv.FormatInt(clk.Now().Unix()+1, 10)}
	for name, v := range want {
		if got := w.Header().Get(name); got != v {
			t.Errorf("%s: got %q, want %q", name, got, v)
		}
	}
	own := d.Wrap(GroupLink, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Limit", "app's own")
		_, _ = w.Write([]byte("ok"))
	}), nil)
	w = do(own, "GET", "192.0.2.2:1")
	if got := w.Header().Values("X-RateLimit-Limit"); len(got) != 1 || got[0] != "app's own" {
		t.Errorf("X-RateLimit-Limit set by the answer: got %q, want the answer's alone", got)
	}
	if got := w.Header().Get("X-RateLimit-Remaining"); got != "19" {
		t.Errorf("X-RateLimit-Remaining beside the answer's own Limit: got %q, want 19", got)
	}
}

// TestRefusedFieldsAllocations: a flood of refusals with httprate's
// fields allocates nothing, as with the draft's.
func TestRefusedFieldsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	b := DefaultBudgets()[GroupLink]
	b.XRateLimit = true
	allocs, h, _ := refusalAllocs(t, b)
	if allocs != 0 {
		t.Errorf("429 with X-RateLimit fields: got %v allocations, want 0", allocs)
	}
	if got := h.Get("X-RateLimit-Remaining"); got != "0" {
		t.Errorf("X-RateLimit-Remaining: got %q, want 0", got)
	}
}

// refusalAllocs spends a link group with budget b through its header map,
// then returns the allocations of one more refusal, the header it set and
// the group's handler, spent.
func refusalAllocs(t *testing.T, b Budget) (float64, http.Header, http.Handler) {
	t.Helper()
	d, err := New(Config{MeterProvider: sdkProvider(), Budgets: map[Group]Budget{GroupLink: b}})
	if err != nil {
		t.Fatal(err)
	}
	h := d.Wrap(GroupLink, http.NotFoundHandler(), nil)
	w := &discard{h: http.Header{}}
	get := requests(1, "GET")[0]
	for range b.Burst {
		h.ServeHTTP(w, get)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		clear(w.h)
		h.ServeHTTP(w, get)
	})
	return allocs, w.h, h
}

// TestRefusalStatus: a group's RefusalStatus answers its rate and
// client-cap refusals, as nginx's limit_req_status does, with Retry-After,
// its fields and a body of that status; the door refuses a status outside
// 400 to 599.
func TestRefusalStatus(t *testing.T) {
	b := DefaultBudgets()[GroupLink]
	b.RefusalStatus = http.StatusServiceUnavailable
	h := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupLink: b}}).Wrap(GroupLink, status(http.StatusOK), nil)
	for range b.Burst {
		allowed(t, h, "192.0.2.1:1", http.StatusOK)
	}
	w := rejected(t, h, "192.0.2.1:1", http.StatusServiceUnavailable, "1")
	if got, want := w.Body.String(), "Service Unavailable: limit \"link\"\n"; got != want {
		t.Errorf("body: got %q, want %q", got, want)
	}
	if w.Header().Get("RateLimit") == "" {
		t.Errorf("RateLimit: none, want the refusal's")
	}
	for _, bad := range []int{399, 600, -1} {
		b.RefusalStatus = bad
		if _, err := New(Config{Budgets: map[Group]Budget{GroupLink: b}}); err == nil || !strings.Contains(err.Error(), "want 400 to 599") {
			t.Errorf("RefusalStatus %d: got %v, want a refusal", bad, err)
		}
	}
}
