package main

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/cmd/admit/internal/upstream"
)

// forwarder builds the reverse proxy to the upstream.
type forwarder struct {
	target   *url.URL
	resolver *clientip.Resolver
	trusted  []netip.Prefix // the resolver's trusted proxies, for X-Forwarded-Proto and -Host
	// keepOverrides forwards method override headers (--method-override).
	keepOverrides bool
	log           *slog.Logger
	failures      rate.Sometimes // throttles the log of upstream failures
}

// newProxy returns a reverse proxy to target over transport. The request it
// sends carries:
//
//   - X-Forwarded-For: the client address the resolver found, alone. The
//     client's own X-Forwarded-For, Forwarded, X-Real-IP and the other
//     headers of stripHeaders are removed, so the upstream can trust the
//     header as long as only admit reaches it.
//   - X-Forwarded-Host and X-Forwarded-Proto: those a trusted proxy sent, or
//     else the request's Host and the scheme admit served it with.
//
// An upstream that cannot be reached or fails mid-answer gets the client a
// plain 502 that names nothing internal; the cause is logged, at most once
// every 10 seconds.
func newProxy(target *url.URL, resolver *clientip.Resolver, trusted []netip.Prefix, keepOverrides bool, transport http.RoundTripper, log *slog.Logger) *httputil.ReverseProxy {
	f := &forwarder{target: target, resolver: resolver, trusted: trusted, keepOverrides: keepOverrides, log: log,
		failures: rate.Sometimes{Interval: 10 * time.Second}}
	return &httputil.ReverseProxy{
		Rewrite:      f.rewrite,
		Transport:    transport,
		BufferPool:   upstream.BufferPool(),
		ErrorHandler: f.fail,
		// The proxy's own log lines can name the client; keep them at Debug.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

func (f *forwarder) rewrite(pr *httputil.ProxyRequest) {
	// Rewrite has removed X-Forwarded-For, -Host, -Proto and Forwarded from
	// pr.Out already; the other managed headers are left to us.
	pr.SetURL(f.target)
	h := pr.Out.Header
	stripHeaders(h, f.keepOverrides)
	if a := f.resolver.Addr(pr.In); a.IsValid() {
		h["X-Forwarded-For"] = []string{a.String()}
	}
	host, proto := pr.In.Host, "http"
	if pr.In.TLS != nil {
		proto = "https"
	}
	if f.fromTrustedPeer(pr.In) {
		if p := pr.In.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			proto = p
		}
		if v := pr.In.Header.Get("X-Forwarded-Host"); v != "" {
			host = v
		}
	}
	h["X-Forwarded-Host"] = []string{host}
	h["X-Forwarded-Proto"] = []string{proto}
}

// fromTrustedPeer reports whether the request's TCP peer is a trusted proxy.
func (f *forwarder) fromTrustedPeer(r *http.Request) bool {
	if len(f.trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap().WithZone("")
	for _, p := range f.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (f *forwarder) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil { // not the client hanging up
		// The transport's error names the request's URL, whose path or
		// query may hold a link's token: log only the cause.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		f.failures.Do(func() {
			f.log.Warn("admit: upstream request failed; answering 502", "err", err)
		})
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadGateway)
	io.WriteString(w, "bad gateway\n")
}
