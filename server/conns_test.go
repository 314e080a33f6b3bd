package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/grpchealth"

	"github.com/admitgo/admit/server/internal/ops"
)

// served reports whether a request on c is answered; false when the server
// closed the connection instead.
func served(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(c, "GET /u/x HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func TestConnectionCaps(t *testing.T) {
	rec := newRecorder(t)
	r := start(t, "--upstream", rec.url, "--max-conns", "3", "--max-conns-per-client", "2")
	addr := strings.TrimPrefix(r.url, "http://")

	a1, a2 := dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr)
	for _, c := range []net.Conn{a1, a2} {
		if !served(t, c) {
			t.Fatal("a client's first two connections: want them served")
		}
	}
	if served(t, dialFrom(t, "127.0.0.2", addr)) {
		t.Error("a client's third connection: served, want it closed (--max-conns-per-client 2)")
	}
	// The refused connection holds its place in the total until the server
	// has closed it, just after the client read its end; wait for that.
	openConns := func() int {
		return r.scrapeCount(t, `admit_server_connections{admit_server_listener="proxy"`)
	}
	for deadline := time.Now().Add(testTimeout); openConns() != 2; {
		if time.Now().After(deadline) {
			t.Fatal("the refused connection still counts among the open ones")
		}
	}
	b := dialFrom(t, "127.0.0.3", addr)
	if !served(t, b) {
		t.Fatal("another client's connection: want it served")
	}
	if served(t, dialFrom(t, "127.0.0.4", addr)) {
		t.Error("a fourth connection in all: served, want it closed (--max-conns 3)")
	}
	if got := r.scrapeCount(t, `admit_server_connections{admit_server_listener="proxy"`); got != 3 {
		t.Errorf("open connections: got %d, want 3", got)
	}
	a1.Close()
	// The server sees the close when its read returns; wait for the gauge.
	deadline := time.Now().Add(testTimeout)
	for r.scrapeCount(t, `admit_server_connections{admit_server_listener="proxy"`) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the open connections gauge did not drop after a close")
		}
	}
	if !served(t, dialFrom(t, "127.0.0.4", addr)) {
		t.Error("after a connection closed, a new one: refused, want it served")
	}
	if got := r.scrapeCount(t, `admit_server_connections_refused_total{admit_server_listener="proxy",admit_server_reason="max_conns_per_client"`); got != 1 {
		t.Errorf("refused per client: got %d, want 1", got)
	}
	if got := r.scrapeCount(t, `admit_server_connections_refused_total{admit_server_listener="proxy",admit_server_reason="max_conns"`); got < 1 {
		t.Errorf("refused in all: got %d, want at least 1", got)
	}
}

// TestConnectionCapsSpareTrustedProxies checks that a trusted proxy, which
// carries many clients' requests, is not held to one client's share.
func TestConnectionCapsSpareTrustedProxies(t *testing.T) {
	rec := newRecorder(t)
	r := start(t, "--upstream", rec.url, "--max-conns-per-client", "1", "--trusted-proxy", "127.0.0.5")
	addr := strings.TrimPrefix(r.url, "http://")
	for i := range 3 {
		if !served(t, dialFrom(t, "127.0.0.5", addr)) {
			t.Fatalf("the trusted proxy's connection %d: want it served", i+1)
		}
	}
}

// TestMetricsListenerIsBounded checks that the metrics listener cuts slow and
// idle clients, unlike the proxy, whose unlimited routes may stream.
func TestMetricsListenerIsBounded(t *testing.T) {
	s := &server{tel: &ops.Telemetry{Handler: http.NotFoundHandler()}, health: grpchealth.NewStaticChecker()}
	srv := s.metricsServer(nil)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("metrics server timeouts: header %v, read %v, write %v, idle %v; want all set",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
	// A slot on the capped listener is held only briefly by a client that
	// sends nothing.
	if srv.ReadHeaderTimeout > 5*time.Second || srv.IdleTimeout >= time.Minute {
		t.Errorf("metrics server timeouts: header %v, idle %v; want at most 5s and under a minute", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
}
