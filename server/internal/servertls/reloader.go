package servertls

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/meter"
)

// DefaultEvery is how often at most a Reloader looks at its files.
const DefaultEvery = time.Second

// Config says where a server's certificate is and how it is watched.
type Config struct {
	CertFile, KeyFile string // PEM; the flags --tls-cert and --tls-key
	// Front begins errors and log lines: "admit", "admit auth", "admit rls".
	Front string
	// Every is how often at most a handshake looks at the files; 0 means
	// DefaultEvery.
	Every time.Duration
	// Now is the clock of those looks; nil means time.Now.
	Now func() time.Time
	// Logger logs each reload and each refused pair; nil means none.
	Logger *slog.Logger
	// MeterProvider counts the reloads in admit.server.certificate_reloads;
	// nil means the global one.
	MeterProvider metric.MeterProvider
}

// Reloader is a server's certificate: loaded from its files by New, and
// again when they change. A handshake looks at the files when Every has
// passed since the last look and loads them when their bytes differ from
// what it last read. A pair that does not load (a rotation caught between
// its two files, a key that is not the certificate's, a file removed) is
// counted and logged once, and the last good pair keeps serving until the
// files change again. It is safe for concurrent use.
type Reloader struct {
	cfg              Config
	now              func() time.Time
	every            time.Duration
	log              *slog.Logger
	reloads          metric.Int64Counter
	success, failure metric.AddOption

	cert atomic.Pointer[tls.Certificate] // what a handshake shows

	mu   sync.Mutex // guards the following fields, and the looks
	seen pair       // the files as last read
	last time.Time  // when they were last looked at
}

// pair is what reading the files found: their bytes, or why they could
// not be read.
type pair struct {
	cert, key []byte
	err       string
}

func (p pair) equal(q pair) bool {
	return bytes.Equal(p.cert, q.cert) && bytes.Equal(p.key, q.key) && p.err == q.err
}

// read reads the pair of files and loads it.
func read(certFile, keyFile string) (pair, *tls.Certificate, error) {
	var p pair
	var err error
	if p.cert, err = os.ReadFile(certFile); err == nil {
		p.key, err = os.ReadFile(keyFile)
	}
	if err != nil {
		p.err = err.Error()
		return p, nil, err
	}
	cert, err := tls.X509KeyPair(p.cert, p.key)
	if err != nil {
		return p, nil, err
	}
	return p, &cert, nil
}

// Load loads a front's --tls-cert and --tls-key once, naming both in its
// error, which starts with front: the check of startup and of validate.
func Load(front, certFile, keyFile string) (tls.Certificate, error) {
	_, cert, err := read(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, loadError(front, certFile, keyFile, err)
	}
	return *cert, nil
}

func loadError(front, certFile, keyFile string, err error) error {
	return fmt.Errorf("%s: --tls-cert %q, --tls-key %q: %w", front, certFile, keyFile, err)
}

// New loads the certificate cfg names; a pair that does not load is an
// error naming both files, as Load's.
func New(cfg Config) (*Reloader, error) {
	r := &Reloader{cfg: cfg, now: cfg.Now, every: cfg.Every, log: cfg.Logger}
	if r.now == nil {
		r.now = time.Now
	}
	if r.every <= 0 {
		r.every = DefaultEvery
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	var err error
	r.reloads, err = mp.Meter(meter.Name).Int64Counter("admit.server.certificate_reloads",
		metric.WithDescription("Loads of the TLS certificate after its files changed, by result: success, or failure when the new pair did not load and the last good one kept serving."),
		metric.WithUnit("{reload}"))
	if err != nil {
		return nil, fmt.Errorf("%s: metrics: %w", cfg.Front, err)
	}
	r.success = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "success")))
	r.failure = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "failure")))
	var cert *tls.Certificate
	r.seen, cert, err = read(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, loadError(cfg.Front, cfg.CertFile, cfg.KeyFile, err)
	}
	r.cert.Store(cert)
	r.last = r.now()
	return r, nil
}

// GetCertificate returns the certificate to show, loading the files again
// first when they may be looked at and have changed; it is a tls.Config's
// GetCertificate. A handshake that finds another looking shows the
// certificate in force rather than wait: a file slow to read (a network
// file system) delays one handshake at most.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if r.mu.TryLock() {
		// A clock that went back counts as time passed, so that a jump
		// back does not stop the looks until it catches up.
		if now := r.now(); now.Sub(r.last) >= r.every || now.Before(r.last) {
			r.last = now
			r.lookLocked()
		}
		r.mu.Unlock()
	}
	return r.cert.Load(), nil
}

// lookLocked reads the files and, when they changed, takes their pair or
// counts its refusal.
func (r *Reloader) lookLocked() {
	seen, cert, err := read(r.cfg.CertFile, r.cfg.KeyFile)
	if seen.equal(r.seen) {
		return
	}
	r.seen = seen
	if err != nil {
		r.reloads.Add(context.Background(), 1, r.failure)
		r.log.Warn(r.cfg.Front+": TLS certificate not reloaded; the last one keeps serving",
			"tls_cert", r.cfg.CertFile, "tls_key", r.cfg.KeyFile, "error", err)
		return
	}
	r.cert.Store(cert)
	r.reloads.Add(context.Background(), 1, r.success)
	attrs := []any{"tls_cert", r.cfg.CertFile}
	if leaf := cert.Leaf; leaf != nil { // nil only under GODEBUG x509keypairleaf=0
		attrs = append(attrs, "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter)
	}
	r.log.Info(r.cfg.Front+": TLS certificate reloaded", attrs...)
}

// TLSConfig returns a server's TLS settings: TLS 1.2 and up, showing the
// Reloader's certificate.
func (r *Reloader) TLSConfig() *tls.Config {
	return &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12}
}
