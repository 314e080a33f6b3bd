package admit

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRefusalFieldsAsHeaderWrite: the fields a refusal hands a server that
// writes answers whole are the bytes http.Header.Write makes of the header
// map the refusal fills otherwise, for each family of rate-limit fields,
// with them (rate_limited) and without (client_concurrency), for every
// Retry-After, with extra fields among them; a group whose name net/http would rewrite gets none.
func TestRefusalFieldsAsHeaderWrite(t *testing.T) {
	link := DefaultBudgets()[GroupLink]
	for _, x := range []bool{false, true} {
		b := link
		b.XRateLimit = x
		// Extra fields that sort before, between and after admit's own.
		b.RefusalHeaders = http.Header{"Cache-Control": {"no-store"}, "Link": {"</busy>", "</help>"}, "Server-Timing": {"door"},
			"X-Note": {"x"}, "Zz-Last": {"z"}}
		d, err := New(Config{Now: newClock().Now, Budgets: map[Group]Budget{GroupLink: b, "a\r\nX-Injected: 1": b}})
		if err != nil {
			t.Fatal(err)
		}
		g := d.groups[GroupLink]
		h := &handler{limits: []*group{g}}
		for _, o := range []outcome{outcomeRateLimited, outcomeClientConcurrency} {
			for _, retry := range []int{-1, 0, 1, 7, 59, 60, 3600} {
				rec := httptest.NewRecorder()
				v := verdict{outcome: o, retry: retry}
				writeRefused(rec, httptest.NewRequest("GET", "/l/x", nil), g, h.refused(rec.Header(), g, &ticket{slot: -1}, v), o, retry, nil)
				var want bytes.Buffer
				if err := rec.Result().Header.Write(&want); err != nil {
					t.Fatal(err)
				}
				if got := appendRefusalFields(nil, g, retry, o == outcomeRateLimited); string(got) != want.String() {
					t.Errorf("XRateLimit %v, %v, retry %d:\ngot  %q\nwant %q", x, o, retry, got, want.String())
				}
			}
		}
		if got := appendRefusalFields(nil, d.groups["a\r\nX-Injected: 1"], 1, true); got != nil {
			t.Errorf("a name with CR LF: %q, want none", got)
		}
	}
}

// wholeWriter is a ResponseWriter that writes answers whole, and records
// what it was handed. As answer.Writer's contract says, it declines when
// its header holds a field.
type wholeWriter struct {
	*httptest.ResponseRecorder
	refuse bool // WriteAnswer declines
	got    []byte
}

func (w *wholeWriter) WriteAnswer(status int, fields, body []byte) bool {
	if w.refuse || len(w.Header()) != 0 {
		return false
	}
	w.got = append(append([]byte(nil), fields...), body...)
	w.WriteHeader(status)
	return true
}

// TestRefusalWrittenWhole: a refused request on a server that writes
// answers whole is answered through it, counted once, and answered
// through the header map when the header already holds a field, when the
// request has a body the refusal does not read, or when the server
// declines.
func TestRefusalWrittenWhole(t *testing.T) {
	tests := []struct {
		name      string
		preset    bool // a field is in the header before the door answers
		body      bool
		declines  bool
		wantWhole bool
	}{
		{"plain", false, false, false, true},
		{"a field set before", true, false, false, false},
		{"a body", false, true, false, false},
		{"declined", false, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := DefaultBudgets()[GroupLink]
			budget.Burst, budget.Rate = 1, 0.001
			d, err := New(Config{Budgets: map[Group]Budget{GroupLink: budget}})
			if err != nil {
				t.Fatal(err)
			}
			door := d.Wrap(GroupLink, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), nil)
			door.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/l/x", nil)) // the burst
			w := &wholeWriter{ResponseRecorder: httptest.NewRecorder(), refuse: tt.declines}
			if tt.preset {
				w.Header().Set("Connection", "close")
			}
			r := httptest.NewRequest("GET", "/l/x", nil)
			if tt.body {
				r = httptest.NewRequest("POST", "/l/x", bytes.NewReader([]byte("b")))
			}
			door.ServeHTTP(w, r)
			if w.Code != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", w.Code)
			}
			if whole := w.got != nil; whole != tt.wantWhole {
				t.Errorf("written whole: %v, want %v", whole, tt.wantWhole)
			}
			if !tt.wantWhole && w.Header().Get("Retry-After") == "" {
				t.Error("answered through the header map without Retry-After")
			}
			var n int64
			for i := range d.groups[GroupLink].shards {
				n += int64(d.groups[GroupLink].shards[i].counts.outcomes[outcomeRateLimited].Load())
			}
			if n != 1 {
				t.Errorf("counted %d refusals, want 1", n)
			}
		})
	}
}
