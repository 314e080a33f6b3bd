package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testcert"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/store"
)

// files returns a rediss:// URL's parameters naming the client
// certificate and key ("" for none) and the certificate authority.
func files(cert, key, root string) string {
	v := url.Values{}
	if cert != "" {
		v.Set("sslcert", cert)
		v.Set("sslkey", key)
	}
	v.Set("sslrootcert", root)
	return v.Encode()
}

// syncBuffer is a log destination the store's goroutines may write to
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOpenRedisTLS opens a store on a Redis that speaks only TLS and
// wants a client certificate from its CA. With the certificate and the
// CA, decisions are made; without the certificate the server refuses the
// connection, and a server whose certificate another CA issued is refused
// by admit: startup goes on, logging the TLS error, and the failure policy
// decides each call within the store's timeout rather than after a hang.
func TestOpenRedisTLS(t *testing.T) {
	ca := testcert.NewCA(t, "store test CA")
	srv := testserver.RedisTLS(t, ca)
	cert, key := ca.ClientFiles(t, testcert.Leaf{Serial: 2})
	stranger := testcert.NewCA(t, "store test CA")
	rule := quota.Rule{Name: "tls", Limit: 1, Window: time.Hour}

	t.Run("certificate and CA", func(t *testing.T) {
		st := open(t, store.Config{Front: "admit", Store: parse(t, srv.URL+"?"+files(cert, key, ca.File)), Prefix: "tls-ok:"})
		for i, want := range []bool{true, false} {
			d, err := st.Charger.Allow(context.Background(), rule, quota.Subject("client"))
			if err != nil || d.Allowed != want {
				t.Fatalf("call %d: got allowed %v, %v; want %v, no error", i+1, d.Allowed, err, want)
			}
		}
	})

	for _, tc := range []struct {
		name, query string
		want        []string // one of them
	}{
		// Under TLS 1.3 the client's handshake ends before the server
		// checks its certificate: the server's alert is read, or, when the
		// client writes first, the reset of the connection the server
		// closed.
		{"no client certificate", files("", "", ca.File), []string{"certificate required", "connection reset by peer"}},
		{"server from another CA", files(cert, key, stranger.File), []string{"certificate signed by unknown authority"}},
	} {
		for _, failure := range []quota.Failure{quota.FailClosed, quota.FailOpen} {
			t.Run(tc.name+"/"+failure.String(), func(t *testing.T) {
				var log syncBuffer
				st, err := store.Open(context.Background(), store.Config{
					Front: "admit", Store: parse(t, srv.URL+"?"+tc.query), Prefix: "tls-refused:", Failure: failure,
					Logger: slog.New(slog.NewTextHandler(&log, nil)),
				})
				if err != nil {
					t.Fatalf("Open: %v; want startup to go on, the failure policy deciding", err)
				}
				defer st.Close()
				if !strings.Contains(log.String(), "starting anyway") || !slices.ContainsFunc(tc.want, func(w string) bool { return strings.Contains(log.String(), w) }) {
					t.Errorf("startup log %q: want the store logged as not answering, with one of %q", log.String(), tc.want)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				d, err := st.Charger.Allow(ctx, rule, quota.Subject("client"))
				// The call's error is the TLS error, or the store's timeout
				// where go-redis was still dialling again (DialerRetries).
				if err == nil || ctx.Err() != nil || d.Allowed != (failure == quota.FailOpen) {
					t.Errorf("got allowed %v, %v (waited: %v); want allowed %v by the failure policy, with an error, within the store's timeout", d.Allowed, err, ctx.Err(), failure == quota.FailOpen)
				}
			})
		}
	}
}

// TestOpenRedisTLSFilesRefused stops startup with a usage error (exit 2)
// naming the parameter, when a file the URL names cannot be read, or when
// a URL without TLS names one.
func TestOpenRedisTLSFilesRefused(t *testing.T) {
	ca := testcert.NewCA(t, "store test CA")
	cert, key := ca.ClientFiles(t, testcert.Leaf{Serial: 2})
	missing := filepath.Join(t.TempDir(), "missing.pem")
	unreadable := t.TempDir() // a directory: unreadable as a file, even by root
	for _, tc := range []struct{ url, want string }{
		{"rediss://127.0.0.1:1?" + files(missing, key, ca.File), "sslcert: open " + missing},
		{"rediss://127.0.0.1:1?" + files(cert, missing, ca.File), "sslkey: open " + missing},
		{"rediss://127.0.0.1:1?" + files(cert, key, missing), "sslrootcert: open " + missing},
		{"rediss://127.0.0.1:1?" + files(cert, key, unreadable), "sslrootcert: read " + unreadable + ": is a directory"},
		{"redis://127.0.0.1:1?" + files(cert, key, ca.File), "sslcert is a rediss:// URL's parameter: a redis:// URL connects without TLS"},
	} {
		_, err := store.Open(context.Background(), store.Config{Front: "admit rls", From: "--per-second-store", Store: parse(t, tc.url), Logger: slog.New(slog.DiscardHandler)})
		if code := config.ExitCode(err); code != 2 || !strings.HasPrefix(err.Error(), `admit rls: --per-second-store "`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: exit %d, %v; want exit 2 and %q", tc.url, code, err, tc.want)
		}
	}
}
