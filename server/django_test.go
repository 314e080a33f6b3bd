package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// TestDjangoViewsUnderEveryMethod sends every method to Django function
// views without a method decorator, one behind CsrfViewMiddleware and one
// @csrf_exempt, whose routes name one method each: with admit's default
// settings, no method runs a view beyond the burst, and TRACE and unknown
// methods never reach it. With strict_methods, which says the app
// dispatches by method when Django does not, every request of another
// method runs the view: the hole the default closes.
func TestDjangoViewsUnderEveryMethod(t *testing.T) {
	const burst, sent = 2, 8
	up := testrouter.Start(t, testrouter.Django)
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO"}
	for _, strict := range []bool{false, true} {
		cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: item, pattern: "GET /l/{id}", strict_methods: %[1]v}
  - {group: item, pattern: "POST /w/{id}", strict_methods: %[1]v}
budgets:
  item: {like: link, rate: 0.001, burst: %[2]d, key: "path:id", key_authenticated: true, per_client: 100, inflight: 100}
`, strict, burst))
		r := start(t, "--upstream", up.URL, "--config", cfg)
		addr := strings.TrimPrefix(r.url, "http://")
		escapes := 0
		var table strings.Builder
		for _, view := range []string{"l", "w"} {
			for _, method := range methods {
				up.Reset(t)
				id := view + "-" + strings.ToLower(method) // one budget per view and method
				answers := map[int]int{}
				for range sent {
					a := rawFrom(t, "127.0.0.1", addr, method+" /"+view+"/"+id+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
					answers[a.status]++
				}
				hits := up.Hits(t)
				escapes += max(hits-burst, 0)
				fmt.Fprintf(&table, "\n%-8s /%s/%-10s %-24s %d hits", method, view, id, summarise(answers), hits)
				if strict {
					continue
				}
				if hits > burst {
					t.Errorf("%s /%s/%s: the view ran %d times for %d requests, want at most the burst, %d (admit answered %v)", method, view, id, hits, sent, burst, answers)
				}
				if (method == "TRACE" || method == "FOO") && answers[http.StatusNotImplemented] != sent {
					t.Errorf("%s /%s/%s: admit answered %v, want %d x 501", method, view, id, answers, sent)
				}
			}
		}
		t.Logf("strict_methods %v: %d runs beyond the burst; method, path, admit's answers, the view's runs:%s", strict, escapes, table.String())
		if strict && escapes == 0 {
			t.Error("under strict_methods no view ran beyond the burst: the app no longer shows the hole, so the test shows nothing")
		}
		if err := r.stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	}
}
