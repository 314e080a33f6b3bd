package rlsd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/admitgo/admit/internal/testcert"
	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/server/internal/config"
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

// callWith calls ShouldRateLimit on addr over TLS trusting roots, showing
// certs, and returns the call's error.
func callWith(t *testing.T, addr string, roots *x509.CertPool, certs ...tls.Certificate) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots, Certificates: certs})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err = pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, envoyRequest("10.0.0.1"))
	return err
}

// TestRLSClientCertificates: with --client-ca and --client-san, only a
// client whose certificate that CA signed for client authentication, with
// the name among its DNS names, is answered; every way around it is
// refused at the handshake.
func TestRLSClientCertificates(t *testing.T) {
	serverCA, clientCA, otherCA := testcert.NewCA(t, "server CA"), testcert.NewCA(t, "client CA"), testcert.NewCA(t, "another CA")
	cert, key := serverCA.Server(t, 1)
	s := startRLS(t, rlsTestConfig, "--tls-cert", cert, "--tls-key", key, "--client-ca", clientCA.File, "--client-san", "envoy.mesh")
	serverOnly, serverOnlyKey := clientCA.Issue(t, testcert.Leaf{Serial: 7, DNSNames: []string{"envoy.mesh"}})
	serverUsage, err := tls.X509KeyPair(serverOnly, serverOnlyKey)
	if err != nil {
		t.Fatal(err)
	}
	spiffe, _ := url.Parse("spiffe://envoy.mesh/envoy")
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		ok    bool
	}{
		{"the CA's certificate with the name", []tls.Certificate{clientCA.Client(t, testcert.Leaf{Serial: 2, DNSNames: []string{"envoy.mesh"}})}, true},
		{"the name among others, in another case", []tls.Certificate{clientCA.Client(t, testcert.Leaf{Serial: 3, DNSNames: []string{"other.mesh", "Envoy.Mesh"}})}, true},
		{"a wildcard the CA signed", []tls.Certificate{clientCA.Client(t, testcert.Leaf{Serial: 4, DNSNames: []string{"*.mesh"}})}, true},
		{"no certificate", nil, false},
		{"another CA's certificate with the name", []tls.Certificate{otherCA.Client(t, testcert.Leaf{Serial: 2, DNSNames: []string{"envoy.mesh"}})}, false},
		{"the server's certificate, another CA", []tls.Certificate{mustPair(t, cert, key)}, false},
		{"another name", []tls.Certificate{clientCA.Client(t, testcert.Leaf{Serial: 5, DNSNames: []string{"other.mesh"}})}, false},
		{"the name as a suffix", []tls.Certificate{clientCA.Client(t, testcert.Leaf{Serial: 5, DNSNames: []string{"evil-envoy.mesh", "envoy.mesh.evil"}})}, false},
		{"the name in the common name only", []tls.Certificate{clientCA.Client(t, testcert.Leaf{Serial: 6, CommonName: "envoy.mesh"})}, false},
		{"the name in a URI only", []tls.Certificate{clientCA.Client(t, testcert.Leaf{Serial: 6, URIs: []*url.URL{spiffe}})}, false},
		{"a certificate for servers, not clients", []tls.Certificate{serverUsage}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := callWith(t, s.addr, serverCA.Pool, tc.certs...)
			if (err == nil) != tc.ok {
				t.Fatalf("ShouldRateLimit: got %v, want answered %v", err, tc.ok)
			}
		})
	}
	t.Run("without --client-san any certificate of the CA", func(t *testing.T) {
		s := startRLS(t, rlsTestConfig, "--tls-cert", cert, "--tls-key", key, "--client-ca", clientCA.File)
		if err := callWith(t, s.addr, serverCA.Pool, clientCA.Client(t, testcert.Leaf{Serial: 8})); err != nil {
			t.Errorf("a certificate of the CA: got %v, want an answer", err)
		}
		if err := callWith(t, s.addr, serverCA.Pool); err == nil {
			t.Error("no certificate: answered, want refused")
		}
	})
}

func mustPair(t *testing.T, cert, key string) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// TestRLSTLSRefusals: what cannot serve as asked exits 2, naming the flag.
func TestRLSTLSRefusals(t *testing.T) {
	ca := testcert.NewCA(t, "admit rls test")
	cert, _ := ca.Server(t, 1)
	_, otherKey := ca.Server(t, 2)
	goodCert, goodKey := ca.Server(t, 3)
	notPEM := writeConfig(t, "not a certificate")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", cert, "--tls-key", otherKey}, "admit rls: --tls-cert"},
		{[]string{"--client-ca", ca.File}, "admit rls: --client-ca is set but --tls-cert (ADMIT_RLS_TLS_CERT) is not"},
		{[]string{"--tls-cert", goodCert, "--tls-key", goodKey, "--client-san", "envoy.mesh"}, "admit rls: --client-san is set but --client-ca (ADMIT_RLS_CLIENT_CA) is not"},
		{[]string{"--tls-cert", goodCert, "--tls-key", goodKey, "--client-ca", notPEM}, "admit rls: --client-ca " + `"` + notPEM},
		{[]string{"--tls-cert", goodCert, "--tls-key", goodKey, "--client-ca", notPEM + ".missing"}, "admit rls: --client-ca"},
	} {
		err := Run(context.Background(), append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--config", writeConfig(t, rlsTestConfig)}, tc.args...),
			func(string) string { return "" }, io.Discard, io.Discard)
		var uerr config.UsageError
		if !errors.As(err, &uerr) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want a usage error (exit 2) starting %q", tc.args, err, tc.want)
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

// TestRLSReferenceClientCA: in reference mode GRPC_CLIENT_TLS_CACERT and
// GRPC_CLIENT_TLS_SAN set --client-ca and --client-san, and an error about
// the CA names the variable.
func TestRLSReferenceClientCA(t *testing.T) {
	env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:6379",
		"GRPC_SERVER_USE_TLS": "true", "GRPC_SERVER_TLS_CERT": "cert.pem", "GRPC_SERVER_TLS_KEY": "key.pem",
		"GRPC_CLIENT_TLS_CACERT": "ca.pem", "GRPC_CLIENT_TLS_SAN": "envoy.mesh"}
	o, err := parseFlags(nil, referenceEnv(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.ClientCA != "ca.pem" || o.ClientSAN != "envoy.mesh" || o.caFrom != "GRPC_CLIENT_TLS_CACERT" {
		t.Errorf("got --client-ca %q from %q, --client-san %q; want ca.pem from GRPC_CLIENT_TLS_CACERT, envoy.mesh", o.ClientCA, o.caFrom, o.ClientSAN)
	}
	// The flags win over the reference's variables.
	o, err = parseFlags([]string{"--client-ca", "mine.pem", "--client-san", "me"}, referenceEnv(env), io.Discard)
	if err != nil || o.ClientCA != "mine.pem" || o.ClientSAN != "me" || o.caFrom != "--client-ca" {
		t.Errorf("with the flags: got %q from %q, %q, %v; want mine.pem from --client-ca, me", o.ClientCA, o.caFrom, o.ClientSAN, err)
	}
}
