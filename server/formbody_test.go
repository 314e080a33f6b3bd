package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFormBodyBreaksOff sends form bodies that end before their
// Content-Length: on a path a _method could take to a limited route the
// front must read the body first, and refuses it (form_body) rather than
// guess; on a path no method reaches, the body is not read before routing
// and the request goes on to the upstream as it would without admit.
func TestFormBodyBreaksOff(t *testing.T) {
	rec := newRecorder(t)
	cfg := writeConfig(t, `
routes:
  - {group: link, pattern: "GET /l/{id}"}
`)
	r := start(t, "--upstream", rec.url, "--config", cfg)
	addr := strings.TrimPrefix(r.url, "http://")
	for _, tc := range []struct {
		path    string
		refused bool
	}{
		{"/l/abc", true},   // _method=GET would reach GET /l/{id}
		{"/upload", false}, // no route: forwarded, and the upstream sees the body break off
	} {
		c, err := net.DialTimeout("tcp", addr, testTimeout)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(testTimeout))
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n_method=GE", tc.path)
		c.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		resp.Body.Close()
		c.Close()
		if refused := resp.StatusCode == http.StatusBadRequest; refused != tc.refused {
			t.Errorf("%s with a body that breaks off: got %d, want it refused with 400: %v", tc.path, resp.StatusCode, tc.refused)
		}
	}
	if got := r.scrapeCount(t, `admit_server_malformed_total{admit_server_reason="form_body"`); got != 1 {
		t.Errorf("form_body refusals: got %d, want 1", got)
	}
}
