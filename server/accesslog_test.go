package server

import (
	"bufio"
	"encoding/json"
	"log/slog"
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
// group, outcome, status and key; a header key as its hash, never the
// credential; a request refused before routing with its reason; requests
// on no limited route not at all.
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
		get(t, r, "127.0.0.7", "/api/x")
	}
	get(t, r, "127.0.0.8", "/t/x", "Authorization: "+secret)
	get(t, r, "127.0.0.7", "/free")
	get(t, r, "127.0.0.7", "/api/%00")
	want := []map[string]any{
		{"method": "GET", "path": "/api/x", "group": "api", "outcome": "ok", "status": 200.0, "key": "127.0.0.7/32"},
		{"method": "GET", "path": "/api/x", "group": "api", "outcome": "ok", "status": 200.0, "key": "127.0.0.7/32"},
		{"method": "GET", "path": "/api/x", "group": "api", "outcome": "rate_limited", "status": 429.0, "key": "127.0.0.7/32"},
		{"method": "GET", "path": "/t/x", "group": "token", "outcome": "ok", "status": 200.0},
		{"method": "GET", "path": "/t/x", "group": "api", "outcome": "ok", "status": 200.0, "key": "127.0.0.8/32"},
		{"method": "GET", "path": "/api/%00", "outcome": "malformed", "reason": "control", "status": 400.0},
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
	if key, _ := lines[3]["key"].(string); len(key) != 32 || strings.Trim(key, "0123456789abcdef") != "" {
		t.Errorf("token key %q, want the credential's hash, 32 hex digits", key)
	}
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "access-log-secret") {
		t.Error("the access log holds the credential")
	}
}

// TestAccessLogSamplesRefusals: a flood of refusals writes at most
// --access-log-refusals lines a second, the next line says how many it left
// out, and admitted requests are never left out. A path is cut to a bound.
func TestAccessLogSamplesRefusals(t *testing.T) {
	clk := testclock.New(time.Unix(1e9, 0))
	r, log := startLogged(t, clk, `
budgets:
  api: {rate: 0.001, burst: 1}
routes:
  - {group: api, pattern: "GET /api/{x...}"}
`, "--access-log-refusals", "2")
	long := "/api/" + strings.Repeat("a", 4000)
	for range 10 {
		get(t, r, "127.0.0.7", long)
	}
	get(t, r, "127.0.0.9", "/api/x") // admitted: a new client's burst
	clk.Advance(time.Second)
	get(t, r, "127.0.0.7", "/api/x")
	var outcomes []string
	var suppressed []any
	for _, l := range accessLines(t, log) {
		outcomes = append(outcomes, l["outcome"].(string))
		suppressed = append(suppressed, l["suppressed"])
		if p, _ := l["path"].(string); len(p) > maxLoggedPath+3 {
			t.Errorf("a path of %d bytes logged, want at most %d", len(p), maxLoggedPath+3)
		}
	}
	// The first of the ten is admitted; of the nine refusals two are
	// written, as is the admission; a second later the next refusal says
	// the seven it follows were left out.
	wantOutcomes := "ok rate_limited rate_limited ok rate_limited"
	if got := strings.Join(outcomes, " "); got != wantOutcomes {
		t.Errorf("outcomes %q, want %q", got, wantOutcomes)
	}
	if suppressed[4] != 7.0 {
		t.Errorf("last line's suppressed: %v, want 7", suppressed[4])
	}
	for i := range 4 {
		if suppressed[i] != nil {
			t.Errorf("line %d: suppressed %v, want none", i+1, suppressed[i])
		}
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
