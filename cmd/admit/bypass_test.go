package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// bypassSpellings are spellings of GET /l/abc, a request to the limited
// route, that some router in front of or behind a proxy routes to the same
// handler: each is in the matrix because a real router does so (see
// internal/testrouter's quirk tests).
var bypassSpellings = []struct {
	name, request string // the request line and any headers, without the final CRLF
}{
	{"as routed", "GET /l/abc HTTP/1.1"},
	{"HEAD", "HEAD /l/abc HTTP/1.1"},
	{"query", "GET /l/abc?x=1 HTTP/1.1"},
	{"encoded slash", "GET /l%2Fabc HTTP/1.1"},
	{"encoded slash, lower-case", "GET /l%2fabc HTTP/1.1"},
	{"trailing encoded slash", "GET /l/abc%2F HTTP/1.1"},
	{"encoded backslash", "GET /l%5Cabc HTTP/1.1"},
	{"backslash", "GET /l\\abc HTTP/1.1"},
	{"upper case", "GET /L/abc HTTP/1.1"},
	{"trailing slash", "GET /l/abc/ HTTP/1.1"},
	{"upper case, trailing slash", "GET /L/ABC/ HTTP/1.1"},
	{"lower-case method", "get /l/abc HTTP/1.1"},
	{"mixed-case method", "Get /l/abc HTTP/1.1"},
	{"method override", "POST /l/abc HTTP/1.1\r\nX-HTTP-Method-Override: GET\r\nContent-Length: 0"},
	{"method override, underscores", "POST /l/abc HTTP/1.1\r\nX_HTTP_Method_Override: GET\r\nContent-Length: 0"},
	{"encoded dot segments", "GET /l/%2e%2e/l/abc HTTP/1.1"},
	{"dot segments", "GET /u/../l/abc HTTP/1.1"},
	{"dot segment", "GET /l/./abc HTTP/1.1"},
	{"doubled slashes", "GET //l//abc HTTP/1.1"},
	{"escaped letter", "GET /%6c/abc HTTP/1.1"},
	{"absolute form", "GET http://127.0.0.1/l/abc HTTP/1.1"},
}

// TestBypassMatrix puts admit in front of real routers that route
// differently from Go's 1.22 ServeMux, and sends each spelling of a limited
// request more times than the burst, each spelling from its own address:
// whatever the router makes of a spelling, its limited handler runs at most
// the burst. The table it logs (go test -v) is the matrix of router and
// spelling: what admit answered and how often the limited handler ran.
func TestBypassMatrix(t *testing.T) {
	const burst, sent = 3, 6
	cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: link, pattern: "GET /l/{id}"}
budgets:
  link: {burst: %d, per_client: 100, inflight: 100}
`, burst))
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s", "spelling")
	for _, kind := range testrouter.Kinds() {
		fmt.Fprintf(&table, " %-18s", kind)
	}
	rows := make([][]string, len(bypassSpellings))
	for _, kind := range testrouter.Kinds() {
		up := testrouter.Start(t, kind)
		r := start(t, "--upstream", up.URL, "--config", cfg, "--trusted-proxy", "127.0.0.1")
		addr := strings.TrimPrefix(r.url, "http://")
		for i, sp := range bypassSpellings {
			up.Reset(t)
			answers := map[int]int{}
			for range sent {
				a := rawFrom(t, fmt.Sprintf("127.0.%d.%d", 10+i/200, 1+i%200), addr, sp.request+"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
				answers[a.status]++
			}
			hits := up.Hits(t)
			if hits > burst {
				t.Errorf("%s, %s: the limited handler ran %d times for %d requests, want at most the burst, %d (admit answered %v)",
					kind, sp.name, hits, sent, burst, answers)
			}
			if i == 0 && hits != burst {
				t.Errorf("%s, as routed: the limited handler ran %d times, want exactly the burst, %d", kind, hits, burst)
			}
			rows[i] = append(rows[i], fmt.Sprintf("%s, %d hits", summarise(answers), hits))
		}
		// Folding limits only what it should: unrouted paths pass
		// unlimited and unchanged.
		up.Reset(t)
		r.answers(t, 3*burst, http.StatusOK, "GET", "/u/a/b", "")
		if seen := up.Last(t); seen.Path != "/u/a/b" {
			t.Errorf("%s: the unlimited handler saw %q, want /u/a/b unchanged", kind, seen.Path)
		}
		if hits := up.Hits(t); hits != 0 {
			t.Errorf("%s: unrouted requests ran the limited handler %d times", kind, hits)
		}
	}
	for i, sp := range bypassSpellings {
		fmt.Fprintf(&table, "\n%-28s", sp.name)
		for _, cell := range rows[i] {
			fmt.Fprintf(&table, " %-18s", cell)
		}
	}
	t.Logf("router x spelling (admit's answers, then the limited handler's runs; %d requests each, burst %d):\n%s", sent, burst, table.String())
}

// summarise writes admit's answers to one spelling compactly: "3x200 3x429".
func summarise(answers map[int]int) string {
	var parts []string
	for _, code := range []int{200, 404, 405, 301, 308, 400, 429} {
		if n := answers[code]; n > 0 {
			parts = append(parts, fmt.Sprintf("%dx%d", n, code))
		}
		delete(answers, code)
	}
	for code, n := range answers {
		parts = append(parts, fmt.Sprintf("%dx%d", n, code))
	}
	return strings.Join(parts, " ")
}
