package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/admitgo/admit/internal/testcert"
	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/server/internal/config"
)

// selfSigned is testcert.SelfSigned, under the name the server's tests
// call it by.
func selfSigned(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	return testcert.SelfSigned(t)
}

// startTLS runs a server over TLS in front of a test upstream.
func startTLS(t *testing.T) (r *running, roots *x509.CertPool) {
	t.Helper()
	cert, key, roots := selfSigned(t)
	r = start(t, append(appRoutes(upstreamApp(t).URL), "--tls-cert", cert, "--tls-key", key)...)
	return r, roots
}

// bigHeaders returns n header lines of size bytes each, values of 'a'.
func bigHeaders(n, size int) []string {
	var hs []string
	for i := range n {
		hs = append(hs, fmt.Sprintf("X-Big-%d: %s", i, strings.Repeat("a", size)))
	}
	return hs
}

func TestHeaderBoundHTTP1(t *testing.T) {
	r, roots := startTLS(t)
	r.client.Transport = &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
	}
	tests := []struct {
		name    string
		headers []string
		want    int
	}{
		{"32 KiB pass", bigHeaders(8, 4<<10), http.StatusOK},
		{"128 KiB get 431", bigHeaders(32, 4<<10), http.StatusRequestHeaderFieldsTooLarge},
		{"one 128 KiB field gets 431", bigHeaders(1, 128<<10), http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := r.do(t, "GET", "/account", "", tt.headers...)
			if resp.StatusCode != tt.want {
				t.Errorf("got %d %q, want %d", resp.StatusCode, body, tt.want)
			}
			if resp.ProtoMajor != 1 {
				t.Errorf("protocol: got %s, want HTTP/1.1", resp.Proto)
			}
		})
	}
}

func TestHeaderBoundHTTP2(t *testing.T) {
	r, roots := startTLS(t)
	tests := []struct {
		name       string
		fields     []hpack.HeaderField
		wantStatus string        // the stream's :status; empty: the connection ends
		wantGoAway http2.ErrCode // when the connection ends
	}{
		{"32 KiB pass", fields(8, 4<<10), "200", 0},
		{"32 fields of 4 KiB get 431", fields(32, 4<<10), "431", 0},
		{"one 128 KiB field ends the connection", fields(1, 128<<10), "", http2.ErrCodeCompression},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, goAway := sendHeaders(t, r.url, roots, tt.fields)
			if status != tt.wantStatus || goAway != tt.wantGoAway {
				t.Errorf("got status %q, GOAWAY %v; want status %q, GOAWAY %v", status, goAway, tt.wantStatus, tt.wantGoAway)
			}
		})
	}
}

// fields returns n header fields of size bytes each.
func fields(n, size int) []hpack.HeaderField {
	var fs []hpack.HeaderField
	for i := range n {
		fs = append(fs, hpack.HeaderField{Name: fmt.Sprintf("x-big-%d", i), Value: strings.Repeat("a", size)})
	}
	return fs
}

// sendHeaders opens an HTTP/2 connection to base, sends one HEADERS frame
// for GET /account with extra, and returns the answer's :status, or the
// GOAWAY code when the server ends the connection instead.
func sendHeaders(t *testing.T, base string, roots *x509.CertPool, extra []hpack.HeaderField) (status string, goAway http2.ErrCode) {
	t.Helper()
	host := strings.TrimPrefix(base, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN: got %q, want h2", p)
	}
	conn.SetDeadline(time.Now().Add(testTimeout))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: host}, {Name: ":path", Value: "/account"},
	}, extra...) {
		if err := enc.WriteField(f); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("header block: %d bytes", block.Len())
	if block.Len() >= 131712 {
		t.Fatalf("header block of %d bytes: keep it under 131,712 so the server reads it", block.Len())
	}
	err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v (no answer and no GOAWAY)", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := fr.WriteSettingsAck(); err != nil && !errors.Is(err, net.ErrClosed) {
					t.Fatal(err)
				}
			}
		case *http2.GoAwayFrame:
			return "", f.ErrCode
		case *http2.HeadersFrame:
			if f.StreamID != 1 {
				continue
			}
			hs, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				if h.Name == ":status" {
					return h.Value, 0
				}
			}
			t.Fatal("an answer without :status")
		}
	}
}

// servedSerial opens a TLS connection to addr, offering HTTP/2 as gRPC and
// browsers do, trusting roots, and returns the serial of the certificate
// shown.
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

// TestTLSCertReload replaces the certificate's files under the proxy's
// HTTPS listener and admit auth's gRPC listener: a new connection gets the
// new certificate once the door's clock has moved a second; a pair that
// does not load (a new certificate beside the old key) keeps the last good
// one serving and is counted.
func TestTLSCertReload(t *testing.T) {
	for _, front := range []struct {
		name  string
		start func(t *testing.T, cert, key string, clk *testclock.Clock) (r *running, addr string)
	}{
		{"proxy", func(t *testing.T, cert, key string, clk *testclock.Clock) (*running, string) {
			cfg := serverConfig(t, append(appRoutes(upstreamApp(t).URL), "--tls-cert", cert, "--tls-key", key)...)
			cfg.Now = clk.Now
			r := startConfig(t, cfg)
			return r, r.s.ln.Addr().String()
		}},
		{"auth grpc", func(t *testing.T, cert, key string, clk *testclock.Clock) (*running, string) {
			cfg, err := config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...),
				[]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--trusted-proxy", "127.0.0.1/32",
					"--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}", "--tls-cert", cert, "--tls-key", key},
				func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Now = clk.Now
			r := startConfig(t, cfg)
			return r, r.s.grpcLn.Addr().String()
		}},
	} {
		t.Run(front.name, func(t *testing.T) {
			ca := testcert.NewCA(t, "admit test")
			cert, key := ca.Server(t, 1)
			clk := testclock.New(time.Now())
			r, addr := front.start(t, cert, key, clk)
			if got := servedSerial(t, addr, ca.Pool); got != 1 {
				t.Fatalf("at start: serial %d, want 1", got)
			}
			next, nextKey := ca.Issue(t, testcert.Leaf{Serial: 2, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
			testcert.Write(t, cert, next) // the key is not written yet
			clk.Advance(time.Second)
			if got := servedSerial(t, addr, ca.Pool); got != 1 {
				t.Fatalf("with a certificate that is not the key's: serial %d, want 1, the last good one", got)
			}
			testcert.Write(t, key, nextKey)
			clk.Advance(time.Second)
			if got := servedSerial(t, addr, ca.Pool); got != 2 {
				t.Fatalf("after the files changed: serial %d, want 2", got)
			}
			for _, result := range []string{"failure", "success"} {
				if got := r.scrapeCount(t, `admit_server_certificate_reloads_total{otel_scope_name="github.com/admitgo/admit",otel_scope_schema_url="",otel_scope_version="",result="`+result+`"}`); got != 1 {
					t.Errorf("certificate reloads, %s: got %d, want 1", result, got)
				}
			}
		})
	}
}

// TestTLSMismatchedPairExits2: a certificate beside another pair's key
// stops startup with exit 2, naming both flags, as a missing file does.
func TestTLSMismatchedPairExits2(t *testing.T) {
	ca := testcert.NewCA(t, "admit test")
	cert, _ := ca.Server(t, 1)
	_, key := ca.Server(t, 2)
	_, err := runArgs(t, nil, "--demo", "--tls-cert", cert, "--tls-key", key)
	var uerr usageError
	if !errors.As(err, &uerr) || !strings.HasPrefix(err.Error(), "admit: --tls-cert ") || !strings.Contains(err.Error(), "private key does not match public key") {
		t.Fatalf("got %v, want a usage error (exit 2) naming --tls-cert and the mismatch", err)
	}
}
