package server

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
)

// accessLines reads the access log at path, one JSON object a line.
func accessLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("access log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

// startLogged starts admit with an access log in a file of its own, on
// clk, and returns the server and the log's path.
func startLogged(t *testing.T, clk *testclock.Clock, yaml string, extra ...string) (*running, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "access.log")
	cfg := serverConfig(t, append([]string{"--upstream", newRecorder(t).url, "--config", writeConfig(t, yaml), "--access-log", log}, extra...)...)
	cfg.Now = clk.Now
	return startConfig(t, cfg), log
}

// TestAccessLogLines: one line per limit of each decided request, with its
// route (never its path), group, outcome, status and key; a header key as
// a hash under the process's own key, never the credential or its plain
// hash; a request refused before routing with its reason and nothing it
// held; requests on no limited route not at all.
func TestAccessLogLines(t *testing.T) {
	const secret = "Bearer access-log-secret"
	r, log := startLogged(t, testclock.New(time.Unix(1e9, 0)), `
budgets:
  api: {rate: 1, burst: 2}
  token: {rate: 1, burst: 5, key: "header:Authorization", key_authenticated: true}
routes:
  - {group: api, pattern: "GET /api/{x}"}
  - {group: [api, token], pattern: "GET /t/{x}"}
`)
	for range 3 {
		get(t, r, "127.0.0.7", "/api/share-secret")
	}
	get(t, r, "127.0.0.8", "/t/x", "Authorization: "+secret)
	get(t, r, "127.0.0.7", "/free")
	get(t, r, "127.0.0.7", "/api/%00secret")
	want := []map[string]any{
		{"method": "GET", "route": "GET /api/{x}", "group": "api", "outcome": "ok", "status": 200.0, "key": "127.0.0.7/32"},
		{"method": "GET", "route": "GET /api/{x}", "group": "api", "outcome": "ok", "status": 200.0, "key": "127.0.0.7/32"},
		{"method": "GET", "route": "GET /api/{x}", "group": "api", "outcome": "rate_limited", "status": 429.0, "key": "127.0.0.7/32"},
		{"method": "GET", "route": "GET /t/{x}", "group": "api", "outcome": "ok", "status": 200.0, "key": "127.0.0.8/32"},
		{"method": "GET", "route": "GET /t/{x}", "group": "token", "outcome": "ok", "status": 200.0},
		{"method": "GET", "outcome": "malformed", "reason": "control", "status": 400.0},
	}
	lines := accessLines(t, log)
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%v", len(lines), len(want), lines)
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s %v, want %v (%v)", i+1, k, lines[i][k], v, lines[i])
			}
		}
		if lines[i]["msg"] != "request" || lines[i]["time"] == nil {
			t.Errorf("line %d: no msg or time: %v", i+1, lines[i])
		}
	}
	door := r.s.gen.Load().door
	req := httptest.NewRequest("GET", "/t/x", nil)
	req.Header.Set("Authorization", secret)
	plain, _ := door.KeyOf("token", req)
	if key, _ := lines[4]["key"].(string); len(key) != 32 || strings.Trim(key, "0123456789abcdef") != "" || key == plain {
		t.Errorf("token key %q, want 32 hex digits of a keyed hash, not the door's plain hash %q", key, plain)
	}
	b, _ := os.ReadFile(log)
	for _, leak := range []string{"access-log-secret", "share-secret", "%00secret", plain} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the access log holds %q", leak)
		}
	}
}

// TestAccessLogSamples: a flood of refusals, and in shadow mode of would-be
// refusals, writes at most --access-log-refusals lines a second, the next
// line says how many it left out, and admitted requests are never left out;
// 0 writes none.
func TestAccessLogSamples(t *testing.T) {
	const yaml = `
budgets:
  api: {rate: 0.001, burst: 1}
routes:
  - {group: api, pattern: "GET /api/{x...}"}
`
	for _, tc := range []struct {
		name, refusals, refused string
		flags                   []string
		want                    string
		suppressed              float64
	}{
		{"refusals", "2", "rate_limited", nil, "ok REFUSED REFUSED ok REFUSED", 7},
		{"shadow mode", "2", "would_rate_limited", []string{"--shadow"}, "ok REFUSED REFUSED ok REFUSED", 7},
		{"none", "0", "rate_limited", nil, "ok ok", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New(time.Unix(1e9, 0))
			r, log := startLogged(t, clk, yaml, append([]string{"--access-log-refusals", tc.refusals}, tc.flags...)...)
			for range 10 {
				get(t, r, "127.0.0.7", "/api/x")
			}
			get(t, r, "127.0.0.9", "/api/x") // admitted: a new client's burst
			clk.Advance(time.Second)
			get(t, r, "127.0.0.7", "/api/x")
			var outcomes []string
			var suppressed []any
			for _, l := range accessLines(t, log) {
				outcomes = append(outcomes, strings.ReplaceAll(l["outcome"].(string), tc.refused, "REFUSED"))
				suppressed = append(suppressed, l["suppressed"])
			}
			// The first of the ten is admitted; of the nine refusals two
			// are written, as is the admission; a second later the next
			// refusal says the seven it follows were left out.
			if got := strings.Join(outcomes, " "); got != tc.want {
				t.Fatalf("outcomes %q, want %q", got, tc.want)
			}
			for i, s := range suppressed {
				want := any(nil)
				if i == 4 {
					want = tc.suppressed
				}
				if s != want {
					t.Errorf("line %d: suppressed %v, want %v", i+1, s, want)
				}
			}
		})
	}
}

// TestAccessLogReopensOnReload: after the file is rotated away, a reload
// opens it again under its name, and later lines go there.
func TestAccessLogReopensOnReload(t *testing.T) {
	r, log := startLogged(t, testclock.New(time.Unix(1e9, 0)), `
budgets:
  api: {rate: 1, burst: 5}
routes:
  - {group: api, pattern: "GET /api/{x}"}
`)
	get(t, r, "127.0.0.7", "/api/x")
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	get(t, r, "127.0.0.7", "/api/x") // still to the rotated file
	r.s.reload()                     // refused (no command line to read) but reopens
	get(t, r, "127.0.0.7", "/api/x")
	if old, fresh := len(accessLines(t, log+".1")), len(accessLines(t, log)); old != 2 || fresh != 1 {
		t.Errorf("rotated file %d lines, new file %d; want 2 and 1", old, fresh)
	}
}

// TestAccessLogBadFile: a log file that cannot be opened stops startup
// with the flag's name.
func TestAccessLogBadFile(t *testing.T) {
	cfg := serverConfig(t, "--demo", "--access-log", filepath.Join(t.TempDir(), "no", "such", "dir", "a.log"))
	_, err := newServer(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "--access-log") {
		t.Fatalf("got %v, want an error naming --access-log", err)
	}
}

// TestAccessLogSamplesMalformedApart: a flood of malformed requests, which
// needs no route, does not use up the lines of a limit's refusals.
func TestAccessLogSamplesMalformedApart(t *testing.T) {
	r, log := startLogged(t, testclock.New(time.Unix(1e9, 0)), `
budgets:
  api: {rate: 0.001, burst: 1}
routes:
  - {group: api, pattern: "GET /api/{x}"}
`, "--access-log-refusals", "2")
	for range 5 {
		get(t, r, "127.0.0.7", "/api/%00")
	}
	for range 4 {
		get(t, r, "127.0.0.7", "/api/x")
	}
	got := map[string]int{}
	for _, l := range accessLines(t, log) {
		got[l["outcome"].(string)]++
	}
	if got["malformed"] != 2 || got["rate_limited"] != 2 || got["ok"] != 1 {
		t.Errorf("lines by outcome %v, want 2 malformed, 1 ok and 2 rate_limited", got)
	}
}

// TestAccessLogTimes: against an upstream that takes two seconds of the
// injected clock, a line says how long the request and the upstream took,
// the body bytes read and written and the upstream's status; a refused
// request has neither upstream_ms nor upstream_status, and a request the
// upstream never answered has upstream_ms without upstream_status. Both
// HTTP engines write the same fields.
func TestAccessLogTimes(t *testing.T) {
	const yaml = `
budgets:
  api: {rate: 0.001, burst: 2}
routes:
  - {group: api, pattern: "GET /api/{x}"}
  - {group: api, pattern: "POST /api/{x}"}
`
	var engines [2][]map[string]any
	for i, engine := range []string{"admit", "net/http"} {
		t.Run(engine, func(t *testing.T) {
			clk := testclock.New(time.Unix(1e9, 0))
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				clk.Advance(2 * time.Second)
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, "created\n")
			}))
			defer slow.Close()
			gone := httptest.NewServer(http.NotFoundHandler())
			gone.Close()
			log := filepath.Join(t.TempDir(), "access.log")
			var refusal string
			for _, up := range []string{slow.URL, gone.URL} {
				cfg := serverConfig(t, "--upstream", up, "--config", writeConfig(t, yaml), "--access-log", log, "--http-engine", engine)
				cfg.Now = clk.Now
				r := startConfig(t, cfg)
				if up == gone.URL {
					r.answers(t, 1, http.StatusBadGateway, "GET", "/api/x", "")
					continue
				}
				r.answers(t, 1, http.StatusCreated, "GET", "/api/x", "")
				r.answers(t, 1, http.StatusCreated, "POST", "/api/x", "hello")
				var resp *http.Response
				resp, refusal = r.do(t, "POST", "/api/x", "hello")
				if resp.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("third request: got %d, want 429", resp.StatusCode)
				}
				if len(refusal) == 0 {
					t.Fatal("the refusal has no body to count")
				}
			}
			lines := accessLines(t, log)
			want := []map[string]any{
				{"method": "GET", "status": 201.0, "duration_ms": 2000.0, "upstream_ms": 2000.0, "upstream_status": 201.0, "bytes_in": 0.0, "bytes_out": 8.0},
				{"method": "POST", "status": 201.0, "duration_ms": 2000.0, "upstream_ms": 2000.0, "upstream_status": 201.0, "bytes_in": 5.0, "bytes_out": 8.0},
				{"method": "POST", "status": 429.0, "outcome": "rate_limited", "duration_ms": 0.0, "bytes_in": 0.0, "bytes_out": float64(len(refusal)), "upstream_ms": nil, "upstream_status": nil},
				{"method": "GET", "status": 502.0, "duration_ms": 0.0, "upstream_ms": 0.0, "upstream_status": nil, "bytes_in": 0.0},
			}
			if len(lines) != len(want) {
				t.Fatalf("%d lines, want %d:\n%v", len(lines), len(want), lines)
			}
			for i, w := range want {
				for k, v := range w {
					if got, ok := lines[i][k]; v == nil && ok || got != v {
						t.Errorf("line %d: %s %v, want %v (%v)", i+1, k, got, v, lines[i])
					}
				}
			}
			engines[i] = lines
		})
	}
	// The same requests give the same lines, time and key aside.
	for i := range engines[0] {
		if i >= len(engines[1]) {
			break
		}
		for k, v := range engines[0][i] {
			if k != "time" && engines[1][i][k] != v {
				t.Errorf("line %d: %s %v under admit's engine, %v under net/http", i+1, k, v, engines[1][i][k])
			}
		}
	}
}

// TestExchangeAllocs: measuring a request without a body for the access
// log (its exchange, found by the request, and the upstream's times)
// allocates nothing once the pool and the maps are warm.
func TestExchangeAllocs(t *testing.T) {
	a := &accessLog{now: testclock.New(time.Unix(1e9, 0)).Now, serving: newPending()}
	req := httptest.NewRequest("GET", "/l/x", nil)
	w := httptest.NewRecorder()
	measure := func() {
		x := a.begin(w)
		a.track(req, x)
		if y := exchangeOf(x); y != x || a.serving.find(req) != x {
			t.Fatal("the exchange is not found by its writer and its request")
		}
		x.forwarding()
		x.forwarded()
		a.untrack(req)
		a.end(x)
	}
	measure()
	if n := testing.AllocsPerRun(1000, measure); n != 0 {
		t.Errorf("measuring a request allocates %v times, want 0", n)
	}
}
