package admit

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// refusedWith drains a group of budget b, then sends a request whose path
// and headers carry markup and a marker, and returns the refusal.
func refusedWith(t *testing.T, b Budget) *httptest.ResponseRecorder {
	t.Helper()
	h := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupLink: b}}).Wrap(GroupLink, status(http.StatusOK), nil)
	for range b.Burst {
		allowed(t, h, "192.0.2.1:1", http.StatusOK)
	}
	r := httptest.NewRequest("GET", "/l/%3Cscript%3Emarker-7f3a?q=<script>marker-7f3a", nil)
	r.RemoteAddr = "192.0.2.1:1"
	r.Header.Set("User-Agent", "<script>marker-7f3a</script>")
	r.Header.Set("Referer", "marker-7f3a")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestRefusalBodyKinds: each kind of refusal body answers with its content
// type and its text, the placeholders filled with admit's own values, and
// Retry-After as the default body has it; nothing the client sent is in
// the answer.
func TestRefusalBodyKinds(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		typ      string
		wantType string
		want     string
	}{
		{"default", "", "", "text/plain; charset=utf-8", "Too Many Requests: limit \"link\"\n"},
		{"text", "{group} is busy ({outcome}, {status}); retry in {retry_after} s.", "", "text/plain; charset=utf-8",
			"link is busy (rate_limited, 429); retry in 1 s."},
		{"html", "<p>{group}: try again in {retry_after} s</p><style>p { color: red }</style>", "text/html; charset=utf-8",
			"text/html; charset=utf-8", "<p>link: try again in 1 s</p><style>p { color: red }</style>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := DefaultBudgets()[GroupLink]
			b.RefusalBody, b.RefusalType = tt.body, tt.typ
			w := refusedWith(t, b)
			if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
				t.Errorf("got %d, Retry-After %q, want 429, 1", w.Code, w.Header().Get("Retry-After"))
			}
			if got := w.Header().Get("Content-Type"); got != tt.wantType {
				t.Errorf("Content-Type: got %q, want %q", got, tt.wantType)
			}
			if got := w.Body.String(); got != tt.want {
				t.Errorf("body: got %q, want %q", got, tt.want)
			}
			noReflection(t, w)
		})
	}
}

// noReflection fails when anything the client sent is in w's answer.
func noReflection(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	var all bytes.Buffer
	_ = w.Result().Header.Write(&all)
	all.Write(w.Body.Bytes())
	for _, sent := range []string{"marker-7f3a", "<script>", "/l/"} {
		if strings.Contains(all.String(), sent) {
			t.Errorf("the answer holds %q, which the client sent:\n%s", sent, all.String())
		}
	}
}

// TestRefusalProblem: a problem document (RFC 9457) is valid JSON of type
// application/problem+json, with the refusal's status, its status text as
// the title, the detail from the template, and retry_after equal to
// Retry-After, for a rate refusal at the group's status and for its
// in-flight cap's 503.
func TestRefusalProblem(t *testing.T) {
	b := DefaultBudgets()[GroupLink]
	b.RefusalType = "application/problem+json"
	b.RefusalStatus = 420 + 9 // the default, written out
	b.RefusalProblemType = "https://example.com/problems/busy"
	b.RefusalBody = `"{group}" said {outcome} at {status}`
	w := refusedWith(t, b)
	if got := w.Header().Get("Content-Type"); got != "application/problem+json" {
		t.Errorf("Content-Type: got %q", got)
	}
	var doc struct {
		Type       string `json:"type"`
		Title      string `json:"title"`
		Status     int    `json:"status"`
		Detail     string `json:"detail"`
		RetryAfter int    `json:"retry_after"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatalf("body %q: %v", w.Body.String(), err)
	}
	want := doc
	want.Type, want.Title, want.Status, want.Detail, want.RetryAfter = b.RefusalProblemType, "Too Many Requests", 429, `"link" said rate_limited at 429`, 1
	if doc != want || w.Code != 429 || w.Header().Get("Retry-After") != "1" {
		t.Errorf("got %d %+v, Retry-After %q, want 429 %+v, 1", w.Code, doc, w.Header().Get("Retry-After"), want)
	}
	noReflection(t, w)

	b.RefusalBody, b.RefusalProblemType = "", ""
	b.PerClient, b.Inflight = 1, 1
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupLink: b}})
	release := make(chan struct{})
	held := make(chan struct{})
	h := d.Wrap(GroupLink, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { close(held); <-release }), nil)
	go do(h, "GET", "192.0.2.1:1")
	<-held
	w = do(h, "GET", "192.0.2.2:1")
	close(release)
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q: %v", w.Body.String(), err)
	}
	if w.Code != 503 || m["type"] != "about:blank" || m["status"] != 503.0 || m["title"] != "Service Unavailable" ||
		m["retry_after"] != 1.0 || m["detail"] != nil || w.Header().Get("Retry-After") != "1" {
		t.Errorf("the group's cap: got %d %v, Retry-After %q", w.Code, m, w.Header().Get("Retry-After"))
	}
}

// TestRefusalHeaders: a group's extra headers go on its refusals, and the
// door refuses a header that is not a token, that the body or the
// connection frames, that is admit's own, a cookie, or a value with a
// control character, naming it.
func TestRefusalHeaders(t *testing.T) {
	b := DefaultBudgets()[GroupLink]
	b.RefusalHeaders = http.Header{"cache-control": {"no-store"}, "Access-Control-Allow-Origin": {" * "}}
	w := refusedWith(t, b)
	if got, got2 := w.Header().Get("Cache-Control"), w.Header().Get("Access-Control-Allow-Origin"); got != "no-store" || got2 != "*" {
		t.Errorf("got Cache-Control %q, Access-Control-Allow-Origin %q, want no-store, *", got, got2)
	}
	for _, bad := range []string{"Connection", "keep-alive", "Transfer-Encoding", "TE", "Trailer", "Upgrade", "Proxy-Authenticate",
		"Content-Length", "Content-Type", "Content-Encoding", "Set-Cookie", "Retry-After", "RateLimit", "RateLimit-Policy",
		"X-RateLimit-Reset", "Admit-Group", "X-Content-Type-Options", "Bad Name", "Bad:Name", ""} {
		b.RefusalHeaders = http.Header{bad: {"1"}}
		_, err := New(Config{Budgets: map[Group]Budget{GroupLink: b}})
		var be *BudgetError
		if !errors.As(err, &be) || be.Field != "RefusalHeaders" || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("header %q: got %v, want a refusal naming it", bad, err)
		}
	}
	for _, bad := range []string{"a\r\nX-Injected: 1", "a\nb", "a\x00b"} {
		b.RefusalHeaders = http.Header{"X-Note": {bad}}
		if _, err := New(Config{Budgets: map[Group]Budget{GroupLink: b}}); err == nil || !strings.Contains(err.Error(), "X-Note") {
			t.Errorf("value %q: got %v, want a refusal naming X-Note", bad, err)
		}
	}
}

// TestRefusalBodyRefused: the door refuses an unknown placeholder, an
// unknown content type, a problem type without a problem document, and
// an HTML type without a body.
func TestRefusalBodyRefused(t *testing.T) {
	for _, tt := range []struct{ body, typ, problem, field string }{
		{"{path}", "", "", "RefusalBody"},
		{"x", "application/json", "", "RefusalType"},
		{"", "", "https://example.com/p", "RefusalProblemType"},
		{"", "text/html; charset=utf-8", "", "RefusalBody"},
		{"", "application/problem+json", "https://example.com/a b\n", "RefusalProblemType"},
	} {
		b := DefaultBudgets()[GroupLink]
		b.RefusalBody, b.RefusalType, b.RefusalProblemType = tt.body, tt.typ, tt.problem
		_, err := New(Config{Budgets: map[Group]Budget{GroupLink: b}})
		var be *BudgetError
		if !errors.As(err, &be) || be.Field != tt.field {
			t.Errorf("%+v: got %v, want a refusal of %s", tt, err, tt.field)
		}
	}
}

// TestRefusalTemplateAllocations: a flood of refusals with a templated
// body and extra headers allocates nothing, through the header map and
// through a server that writes answers whole.
func TestRefusalTemplateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	b := DefaultBudgets()[GroupLink]
	b.RefusalType = "application/problem+json"
	b.RefusalBody = "{group} is busy; retry in {retry_after} s"
	b.RefusalHeaders = http.Header{"Cache-Control": {"no-store"}}
	allocs, hdr, h := refusalAllocs(t, b)
	if allocs != 0 {
		t.Errorf("a templated refusal: got %v allocations, want 0", allocs)
	}
	if !strings.Contains(hdr.Get("Cache-Control"), "no-store") {
		t.Errorf("Cache-Control: got %q", hdr.Get("Cache-Control"))
	}
	// The recorder allocates for each answer; a group with the default
	// body sets the count to match.
	w, get := &discard{h: http.Header{}}, requests(1, "GET")[0]
	wholeAllocs := func(h http.Handler, whole *wholeWriter) float64 {
		return testing.AllocsPerRun(1000, func() {
			whole.got = whole.got[:0]
			h.ServeHTTP(whole, get)
		})
	}
	plain, err := New(Config{MeterProvider: sdkProvider()})
	if err != nil {
		t.Fatal(err)
	}
	ph := plain.Wrap(GroupLink, http.NotFoundHandler(), nil)
	for range b.Burst {
		ph.ServeHTTP(w, get)
	}
	whole := &wholeWriter{ResponseRecorder: httptest.NewRecorder()}
	if got, want := wholeAllocs(h, whole), wholeAllocs(ph, &wholeWriter{ResponseRecorder: httptest.NewRecorder()}); got != want {
		t.Errorf("a templated refusal written whole: got %v allocations, want %v as the default body's", got, want)
	}
	if !bytes.Contains(whole.got, []byte(`"retry_after":1}`)) || !bytes.Contains(whole.got, []byte("Cache-Control: no-store\r\n")) {
		t.Errorf("written whole: %q", whole.got)
	}
}

// FuzzRefusalTemplate: a template is refused or parsed, never a panic, and
// what it parses to spells the template again, each placeholder in braces.
func FuzzRefusalTemplate(f *testing.F) {
	for _, seed := range []string{
		"", // no body
		"{group} {status} {retry_after} {outcome}", // every placeholder
		"p { color: red }",                         // CSS: braces around no word
		"{path}",                                   // an unknown placeholder
		"{{group}}",                                // a brace before one
		"{",                                        // an open brace alone
		"}{group",                                  // a close brace first
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pieces, bad, ok := parseTemplate(s)
		if !ok {
			if !strings.Contains(s, "{"+bad+"}") {
				t.Fatalf("%q: refused for %q, which it does not hold", s, bad)
			}
			return
		}
		var again strings.Builder
		for _, p := range pieces {
			if p.hole == noHole {
				again.WriteString(p.text)
			} else {
				again.WriteString("{" + placeholders[p.hole] + "}")
			}
		}
		if again.String() != s {
			t.Fatalf("%q parsed to %q", s, again.String())
		}
	})
}
