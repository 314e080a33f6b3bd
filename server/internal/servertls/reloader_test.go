package servertls

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/internal/testcert"
	"github.com/admitgo/admit/internal/testclock"
)

// reloading is a Reloader on a clock the test moves, its log and its
// reloads' counts readable.
type reloading struct {
	r      *Reloader
	clock  *testclock.Clock
	log    *bytes.Buffer
	reader *sdkmetric.ManualReader
}

func newReloading(t *testing.T, cert, key string) *reloading {
	t.Helper()
	rl := &reloading{clock: testclock.New(time.Unix(1_700_000_000, 0)), log: &bytes.Buffer{}, reader: sdkmetric.NewManualReader()}
	r, err := New(Config{CertFile: cert, KeyFile: key, Front: "admit", Now: rl.clock.Now,
		Logger:        slog.New(slog.NewTextHandler(rl.log, nil)),
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(rl.reader))})
	if err != nil {
		t.Fatal(err)
	}
	rl.r = r
	return rl
}

// reloads returns admit.server.certificate_reloads by result.
func (rl *reloading) reloads(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := rl.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "admit.server.certificate_reloads" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := p.Attributes.Value("result")
				got[v.AsString()] += p.Value
			}
		}
	}
	return got
}

// servedSerial runs one TLS handshake against cfg over a pipe, the client
// trusting roots, and returns the serial of the certificate it was shown.
func servedSerial(t *testing.T, cfg *tls.Config, roots *x509.CertPool) int64 {
	t.Helper()
	serial, err := handshake(cfg, roots)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return serial
}

// handshake shakes hands with a server of cfg and returns the serial of
// the certificate it showed; safe to call from any goroutine.
func handshake(cfg *tls.Config, roots *x509.CertPool) (int64, error) {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	var wg sync.WaitGroup
	wg.Go(func() { tls.Server(s, cfg).Handshake() })
	client := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	err := client.Handshake()
	c.Close() // ends the server's side of a failed handshake
	wg.Wait()
	if err != nil {
		return 0, err
	}
	return client.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

func TestReloadsReplacedFiles(t *testing.T) {
	ca := testcert.NewCA(t, "servertls test")
	cert, key := ca.Server(t, 1)
	rl := newReloading(t, cert, key)
	cfg := rl.r.TLSConfig()
	if got := servedSerial(t, cfg, ca.Pool); got != 1 {
		t.Fatalf("at start: serial %d, want 1", got)
	}
	newCert, newKey := ca.Issue(t, testcert.Leaf{Serial: 2, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	testcert.Write(t, cert, newCert)
	testcert.Write(t, key, newKey)
	// The files are looked at once a second at most.
	rl.clock.Advance(999 * time.Millisecond)
	if got := servedSerial(t, cfg, ca.Pool); got != 1 {
		t.Fatalf("within a second of the last look: serial %d, want 1", got)
	}
	rl.clock.Advance(time.Millisecond)
	if got := servedSerial(t, cfg, ca.Pool); got != 2 {
		t.Fatalf("after the files changed: serial %d, want 2", got)
	}
	if got := rl.reloads(t); got["success"] != 1 || got["failure"] != 0 {
		t.Errorf("reloads: got %v, want one success", got)
	}
	if !strings.Contains(rl.log.String(), "serial=2") {
		t.Errorf("log: got %q, want a line naming serial 2", rl.log.String())
	}
	// Written in place, same file and size, the change is still seen.
	sameSize, sameSizeKey := ca.Issue(t, testcert.Leaf{Serial: 3, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err := os.WriteFile(cert, sameSize, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, sameSizeKey, 0o600); err != nil {
		t.Fatal(err)
	}
	rl.clock.Advance(time.Second)
	if got := servedSerial(t, cfg, ca.Pool); got != 3 {
		t.Fatalf("after the files were overwritten in place: serial %d, want 3", got)
	}
}

// TestKeepsTheLastGoodPair replaces the files with pairs that do not load
// (a rotation caught halfway, an operator's mistake, a planted file) and
// wants the last good certificate served, the failure counted and logged
// once, and the good pair that follows loaded.
func TestKeepsTheLastGoodPair(t *testing.T) {
	ca := testcert.NewCA(t, "servertls test")
	other := testcert.NewCA(t, "another CA")
	leaf := func(serial int64) testcert.Leaf {
		return testcert.Leaf{Serial: serial, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
	}
	nextCert, nextKey := ca.Issue(t, leaf(2))
	_, strayKey := other.Issue(t, leaf(9))
	for _, tc := range []struct {
		name      string
		cert, key []byte // nil: the file is removed
	}{
		{"new certificate, old key", nextCert, nil},
		{"half-written certificate", nextCert[:len(nextCert)/2], nextKey},
		{"half-written key", nextCert, nextKey[:len(nextKey)/2]},
		{"key of another pair", nextCert, strayKey},
		{"empty files", []byte{}, []byte{}},
		{"key in the certificate's place", nextKey, nextCert},
		{"files removed", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, key := ca.Server(t, 1)
			rl := newReloading(t, cert, key)
			cfg := rl.r.TLSConfig()
			oldKey, err := os.ReadFile(key)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				path string
				data []byte
			}{{cert, tc.cert}, {key, tc.key}} {
				switch {
				case f.data == nil && f.path == key && tc.cert != nil:
					testcert.Write(t, key, oldKey) // rewritten unchanged
				case f.data == nil:
					if err := os.Remove(f.path); err != nil {
						t.Fatal(err)
					}
				default:
					testcert.Write(t, f.path, f.data)
				}
			}
			for range 3 {
				rl.clock.Advance(time.Second)
				if got := servedSerial(t, cfg, ca.Pool); got != 1 {
					t.Fatalf("after a bad pair: serial %d, want 1, the last good one", got)
				}
			}
			if got := rl.reloads(t); got["failure"] != 1 || got["success"] != 0 {
				t.Errorf("reloads: got %v, want one failure, counted once for the same files", got)
			}
			if n := strings.Count(rl.log.String(), "not reloaded"); n != 1 {
				t.Errorf("log: got %d failure lines in %q, want 1", n, rl.log.String())
			}
			testcert.Write(t, cert, nextCert)
			testcert.Write(t, key, nextKey)
			rl.clock.Advance(time.Second)
			if got := servedSerial(t, cfg, ca.Pool); got != 2 {
				t.Fatalf("after the good pair: serial %d, want 2", got)
			}
		})
	}
}

// TestStartupRefusesABadPair: a pair that does not load at startup is an
// error naming both flags, and there is no last good pair to fall back on.
func TestStartupRefusesABadPair(t *testing.T) {
	ca := testcert.NewCA(t, "servertls test")
	cert, _ := ca.Server(t, 1)
	_, key := ca.Server(t, 2)
	_, err := New(Config{CertFile: cert, KeyFile: key, Front: "admit rls"})
	if err == nil || !strings.HasPrefix(err.Error(), "admit rls: --tls-cert ") || !strings.Contains(err.Error(), "--tls-key") {
		t.Fatalf("got %v, want an error of admit rls naming --tls-cert and --tls-key", err)
	}
}

// TestConcurrentHandshakes shakes hands from several goroutines while the
// files change, for the race detector.
func TestConcurrentHandshakes(t *testing.T) {
	ca := testcert.NewCA(t, "servertls test")
	cert, key := ca.Server(t, 1)
	rl := newReloading(t, cert, key)
	cfg := rl.r.TLSConfig()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				// t.Fatal ends only the goroutine it is called on.
				if got, err := handshake(cfg, ca.Pool); err != nil || got != 1 && got != 2 {
					t.Errorf("serial %d, %v; want 1 or 2", got, err)
				}
			}
		})
	}
	newCert, newKey := ca.Issue(t, testcert.Leaf{Serial: 2, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	for range 5 {
		testcert.Write(t, cert, newCert)
		testcert.Write(t, key, newKey)
		rl.clock.Advance(time.Second)
	}
	wg.Wait()
}
