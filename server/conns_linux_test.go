package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openFiles returns how many descriptors process pid has open.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// metricsGet sends one request with Connection: close to the metrics
// listener at addr from local address from, and returns the answer's status
// and body; ok is false when the listener closed the connection instead.
func metricsGet(t *testing.T, from, addr, path string) (status int, body string, ok bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: testTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); err != nil {
		return 0, "", false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", false
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), err == nil
}

// flood opens n keep-alive connections to the metrics listener at addr,
// connection i from local address from(i), each sending GET /healthz, a
// few at a time. Connections that get an answer are left open and idle, as
// an attacker leaves them, and returned; those the listener closes instead
// are closed.
func flood(t *testing.T, addr string, n int, from func(i int) string) []net.Conn {
	t.Helper()
	const workers = 32
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex // guards held
	var held []net.Conn
	t.Cleanup(func() { closeAll(held) })
	deadline := time.Now().Add(4 * testTimeout)
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if time.Now().After(deadline) {
					t.Errorf("the flood did not end within %v", 4*testTimeout)
					return
				}
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from(i))}, Timeout: testTimeout}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					t.Errorf("connection %d: %v", i, err)
					return
				}
				c.SetDeadline(time.Now().Add(testTimeout))
				_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
				var resp *http.Response
				if err == nil {
					resp, err = http.ReadResponse(bufio.NewReader(c), nil)
				}
				if err != nil {
					c.Close()
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				c.SetDeadline(time.Time{})
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return held
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// floodAddr spreads connections over loopback addresses, perAddr on each:
// 127.0.1.1, 127.0.1.2, ...
func floodAddr(perAddr int) func(i int) string {
	return func(i int) string {
		a := i / perAddr
		return fmt.Sprintf("127.0.%d.%d", 1+a/250, 1+a%250)
	}
}

// TestMetricsListenerFlood replays the attack that once took every
// descriptor of the process through the metrics listener: 20,000 idle
// keep-alive connections to its /healthz, half from one address, half
// spread over 1,250 addresses at the per-client connection cap. The process must keep
// answering proxied requests, keep its descriptors within the metrics cap
// of where they started, and, while one address has its share, serve a
// scrape and a probe from others.
func TestMetricsListenerFlood(t *testing.T) {
	const (
		n         = 10000
		maxConns  = 64 // the defaults of --metrics-max-conns
		perClient = 8  // and --metrics-max-conns-per-client
	)
	p := spawn(t, build(t), "--demo")
	pid := p.cmd.Process.Pid
	metrics := strings.TrimPrefix(p.metrics, "http://")
	proxy := &http.Client{Timeout: testTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := proxy.Get(p.url + "/l/warm"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	before := openFiles(t, pid)

	began := time.Now()
	one := flood(t, metrics, n, func(int) string { return "127.0.0.2" })
	if len(one) != perClient {
		t.Errorf("connections from one address answered: got %d, want %d (--metrics-max-conns-per-client)", len(one), perClient)
	}
	if status, _, ok := metricsGet(t, "127.0.0.1", metrics, "/metrics"); !ok || status != http.StatusOK {
		t.Errorf("a scrape from another address while 127.0.0.2 holds its share: got %d (answered %v), want 200", status, ok)
	}
	if status, _, ok := metricsGet(t, "127.0.0.3", metrics, "/healthz"); !ok || status != http.StatusOK {
		t.Errorf("a probe from a third address: got %d (answered %v), want 200", status, ok)
	}

	spread := flood(t, metrics, n, floodAddr(perClient))
	servedSpread := len(spread)
	flooded := time.Since(began)
	// Within the idle timeout of the first flood, 127.0.0.2 still holds its
	// share; a slow machine may have seen it cut.
	if servedSpread == 0 || servedSpread > maxConns {
		t.Errorf("connections from %d addresses answered: got %d, want 1 to %d (--metrics-max-conns)", n/perClient, servedSpread, maxConns)
	}
	during := openFiles(t, pid)
	sent := time.Now()
	resp, err := proxy.Get(p.url + "/l/under-flood")
	latency := time.Since(sent)
	if err != nil {
		t.Fatalf("a proxied request while the metrics listener is full: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a proxied request while the metrics listener is full: got %d, want 200", resp.StatusCode)
	}
	if latency > 100*time.Millisecond {
		t.Errorf("a proxied request while the metrics listener is full took %v, want under 100ms", latency)
	}
	limit := int(budget(serverConfig(t, "--demo")).total())
	t.Logf("%d connections in %v; descriptors %d before, %d with the listener full (budget %d); a proxied request took %v",
		2*n, flooded.Round(time.Millisecond), before, during, limit, latency)
	// A few more: the warm-up's idle upstream connection and its demo end.
	if during-before > maxConns+4 || during > limit {
		t.Errorf("descriptors: %d before, %d with the listener full; want at most %d more, and at most %d",
			before, during, maxConns+4, limit)
	}

	// The refusals are counted on the metrics listener, not the proxy's.
	// The server sees the flood's closes when its reads return, so scrapes
	// retry until a slot is free.
	closeAll(one)
	closeAll(spread)
	var body string
	eventually(t, "a free metrics slot", func() bool {
		status, b, ok := metricsGet(t, "127.0.0.1", metrics, "/metrics")
		body = b
		return ok && status == http.StatusOK
	})
	series := func(listener, reason string) string {
		return fmt.Sprintf(`admit_server_connections_refused_total{admit_server_listener=%q,admit_server_reason=%q`, listener, reason)
	}
	// A connection refused while the listener was full is counted under
	// max_conns, whoever sent it, so only the sum is exact.
	perAddr, full := metricValue(body, series("metrics", "max_conns_per_client")), metricValue(body, series("metrics", "max_conns"))
	if perAddr < 1 || perAddr > n-perClient {
		t.Errorf("metrics connections refused per client: got %d, want 1 to %d", perAddr, n-perClient)
	}
	if refused := 2*n - len(one) - servedSpread; perAddr+full < refused {
		t.Errorf("metrics connections refused: got %d per client and %d in all, want %d together at least", perAddr, full, refused)
	}
	for _, reason := range []string{"max_conns", "max_conns_per_client"} {
		if got := metricValue(body, series("proxy", reason)); got != 0 {
			t.Errorf("%s}: got %d, want 0", series("proxy", reason), got)
		}
	}
	if !regexp.MustCompile(`admit_server_connections\{admit_server_listener="metrics"[^}]*\} \d+`).MatchString(body) {
		t.Error("/metrics has no admit_server_connections series for the metrics listener")
	}
}
