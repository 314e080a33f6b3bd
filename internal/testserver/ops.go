package testserver

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The helpers of every front's tests that ask an operations or a front
// listener something: the proxy's, admit auth's and admit rls's.

// HostAnswer sends method path to base with Host host and returns the
// status and the body.
func HostAnswer(t testing.TB, client *http.Client, base, host, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s Host %q: %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// MetricValue returns the value of the series of /metrics body that starts
// with prefix, or -1 when there is none.
func MetricValue(body, prefix string) int {
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, prefix) {
			n, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
			if err != nil {
				return -1
			}
			return int(n)
		}
	}
	return -1
}

// DialFrom opens a connection to addr from local address from, closed
// when t ends.
func DialFrom(t testing.TB, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
