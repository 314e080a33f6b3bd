package rlsd

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testcert"
	"github.com/admitgo/admit/internal/testclock"
)

// servedSerial opens a TLS connection to addr as a gRPC client does,
// trusting roots, and returns the serial of the certificate shown.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) int64 {
	t.Helper()
	d := &net.Dialer{Timeout: testTimeout}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestRLSCertReload replaces the gRPC listener's certificate files, as
// envoyproxy/ratelimit's integration test does: a new connection gets the
// new certificate, and a pair that does not load keeps the last good one.
func TestRLSCertReload(t *testing.T) {
	ca := testcert.NewCA(t, "admit rls test")
	cert, key := ca.Server(t, 1)
	clk := testclock.New(time.Now())
	o, err := parseFlags([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--config", writeConfig(t, rlsTestConfig),
		"--tls-cert", cert, "--tls-key", key}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o.now = clk.Now
	s := serveWith(t, o)
	if got := servedSerial(t, s.addr, ca.Pool); got != 1 {
		t.Fatalf("at start: serial %d, want 1", got)
	}
	next, nextKey := ca.Issue(t, testcert.Leaf{Serial: 2, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	testcert.Write(t, cert, next)
	clk.Advance(time.Second)
	if got := servedSerial(t, s.addr, ca.Pool); got != 1 {
		t.Fatalf("with a certificate that is not the key's: serial %d, want 1, the last good one", got)
	}
	testcert.Write(t, key, nextKey)
	clk.Advance(time.Second)
	if got := servedSerial(t, s.addr, ca.Pool); got != 2 {
		t.Fatalf("after the files changed: serial %d, want 2", got)
	}
	// Calls keep being answered over the new certificate.
	wantCodes(t, codesOf(t, s.client(t, ca.Pool), "10.0.0.1", 3), ok, ok, over)
	body := s.scrape(t)
	for _, result := range []string{"success", "failure"} {
		if got := metricValue(body, `admit_server_certificate_reloads_total{otel_scope_name="github.com/admitgo/admit",otel_scope_schema_url="",otel_scope_version="",result="`+result+`"}`); got != 1 {
			t.Errorf("certificate reloads, %s: got %d, want 1", result, got)
		}
	}
}

// writeConfig writes text to a file of its own and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
