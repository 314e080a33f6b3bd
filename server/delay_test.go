package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
)

// delayConfig has two groups that delay: api, whose key's second request
// waits 50 ms of the runtime's timers for its token (a rate of 20/s), and
// slow, whose key's second request waits a minute, which is until its
// client leaves.
const delayConfig = `
budgets:
  api: {rate: 20, burst: 1, queue: 2, max_waiting: 4}
  slow: {rate: 1/m, burst: 1, queue: 2, max_waiting: 4}
routes:
  - {group: api, pattern: "GET /api/{x}"}
  - {group: slow, pattern: "GET /slow/{x}"}
`

// waitingIn spends a slow key's burst from from, then starts its next
// request, which waits, and returns its connection, which the caller
// closes to leave.
func waitingIn(t *testing.T, r *running, from string) net.Conn {
	t.Helper()
	get(t, r, from, "/slow/x")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: testTimeout}
	c, err := d.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "GET /slow/x HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The request waits in the server, across a socket: only its count
	// says it has begun to.
	eventually(t, "a request waiting", func() bool {
		st, _ := r.s.gen.Load().door.GroupState("slow")
		return st.Waiting == 1
	})
	return c
}

// TestAccessLogWaits: a request that waited for its token is logged as
// delayed with how long it waited (wait_ms, on the runtime's timers, which
// the frozen clock does not move), and is never sampled away; one whose
// client left while it waited is logged as delay_abandoned with status
// 499, sampled as refusals are.
func TestAccessLogWaits(t *testing.T) {
	r, log := startLogged(t, testclock.New(time.Unix(1e9, 0)), delayConfig)
	get(t, r, "127.0.0.7", "/api/x")
	get(t, r, "127.0.0.7", "/api/x")
	waitingIn(t, r, "127.0.0.8").Close()
	eventually(t, "the fourth line", func() bool { return len(accessLines(t, log)) == 4 })
	lines := accessLines(t, log)
	for i, want := range []struct {
		outcome string
		status  float64
		waited  bool
	}{{"ok", 200, false}, {"delayed", 200, true}, {"ok", 200, false}, {"delay_abandoned", 499, true}} {
		l := lines[i]
		wait, waited := l["wait_ms"].(float64)
		if l["outcome"] != want.outcome || l["status"] != want.status || waited != want.waited {
			t.Errorf("line %d: %v, want outcome %s, status %v, and wait_ms only after a wait", i+1, l, want.outcome, want.status)
		}
		if i == 1 && wait < 50 {
			t.Errorf("line 2: wait_ms %v, want at least 50", wait)
		}
	}
	if sampledOutcome("delayed") || sampledOutcome("would_delayed") || !sampledOutcome("delay_abandoned") {
		t.Error("delayed and would_delayed requests reached the app and must always be logged; delay_abandoned is sampled")
	}
}

// TestStatusPageShowsWaiting: a group with a queue shows its queue and
// bound in its budget, and how many of its requests wait.
func TestStatusPageShowsWaiting(t *testing.T) {
	cfg := serverConfig(t, "--upstream", newRecorder(t).url, "--config", writeConfig(t, delayConfig))
	cfg.Now = frozen()
	r := startConfig(t, cfg)
	get(t, r, "127.0.0.7", "/api/x")
	get(t, r, "127.0.0.7", "/api/x")
	c := waitingIn(t, r, "127.0.0.8")
	defer c.Close()
	resp, err := r.client.Get(r.metrics + "/admit/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	api, slow, _ := strings.Cut(afterID(t, string(b), "group-api"), `id="group-slow"`)
	for _, want := range []string{
		"token-bucket rate 20/s, burst 1, key peer, queue 2 (the longest wait 100ms), max_waiting 4",
		`<td class="n waiting">0 of 4</td>`,
		`<tr class="outcome-delayed"><td>delayed</td><td class="n total">1</td>`,
	} {
		if !strings.Contains(api, want) {
			t.Errorf("api's section lacks %q:\n%s", want, api)
		}
	}
	if want := `<td class="n waiting">1 of 4</td>`; !strings.Contains(slow, want) {
		t.Errorf("slow's section lacks %q:\n%s", want, slow)
	}
}

// TestExplainDelay: explain says that a key's requests past its burst
// wait, how many, and for how long at the longest; validate prints the
// queue and the bound.
func TestExplainDelay(t *testing.T) {
	path := writeConfig(t, delayConfig)
	out, err := runArgs(t, nil, "explain", "--config", path, "GET", "/api/x")
	if err != nil {
		t.Fatal(err)
	}
	const want = "delay    api: past its burst of 1, a key's next 2 requests wait for their tokens instead of being refused, going in at 20/s; the longest wait is 100ms, and at most 4 requests wait in the group at once"
	if !strings.Contains(out, want) {
		t.Errorf("explain lacks %q:\n%s", want, out)
	}
	out, err = runArgs(t, nil, "validate", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "burst: 1, queue: 2, max_waiting: 4,") {
		t.Errorf("validate does not print the queue:\n%s", out)
	}
	out, err = runArgs(t, nil, "explain", "--config", writeConfig(t, "routes:\n  - {group: link, pattern: \"GET /l/{x}\"}\n"), "GET", "/l/x")
	if err != nil || strings.Contains(out, "delay ") {
		t.Errorf("explain of a group without a queue: %v\n%s", err, out)
	}
}
