package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// echoUpgrader is an upstream that switches every request to an echo
// protocol, as a WebSocket endpoint would.
func echoUpgrader(t *testing.T) string {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			io.WriteString(w, "plain")
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		io.Copy(c, brw)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestUpgradedConnectionsAreHeldToTheBound upgrades a connection on a link
// route whose group has one slot: the slot is held while the upgraded
// connection lives, and the hold bound cuts it, so the group serves again.
func TestUpgradedConnectionsAreHeldToTheBound(t *testing.T) {
	const hold = 300 * time.Millisecond
	cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: link, pattern: "GET /l/{id}"}
budgets:
  link: {inflight: 1, hold_timeout: %s}
`, hold))
	r := start(t, "--upstream", echoUpgrader(t), "--config", cfg, "--upgrade", "echo")
	addr := strings.TrimPrefix(r.url, "http://")

	c := dialFrom(t, "127.0.0.2", addr)
	c.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprint(c, "GET /l/ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: got %v, %v, want 101", resp, err)
	}
	upgraded := time.Now()
	fmt.Fprint(c, "ping")
	if b := make([]byte, 4); !readFull(br, b) || string(b) != "ping" {
		t.Fatalf("the upgraded connection does not echo: got %q", b)
	}
	if resp, _ := r.do(t, "GET", "/l/x", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("while the upgraded connection holds the slot: got %d, want 503", resp.StatusCode)
	}
	// The bound closes the upgraded connection: the read ends.
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("the upgraded connection ended with %v, want the server to close it", err)
	}
	if held := time.Since(upgraded); held > hold+2*time.Second {
		t.Errorf("the upgraded connection lived %v, want it cut at the %v bound", held, hold)
	}
	deadline := time.Now().Add(testTimeout)
	for {
		resp, _ := r.do(t, "GET", "/l/x", "")
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the upgraded connection was cut: still %d, want the slot back", resp.StatusCode)
		}
	}
}

func readFull(r io.Reader, b []byte) bool {
	_, err := io.ReadFull(r, b)
	return err == nil
}
