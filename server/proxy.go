package server

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/internal/upstream"
)

// forwarder rewrites requests for the upstream and answers its failures.
type forwarder struct {
	target   *url.URL
	resolver *clientip.Resolver
	headerRules
	upgrades upgrades // the protocols a request may switch to
	log      *slog.Logger
	failures rate.Sometimes // throttles the log of upstream failures
}

// headerRules are the exceptions to factTable an operator asked for, and
// where stripped headers are counted.
type headerRules struct {
	// keepOverrides forwards the method override headers, spelled as
	// methodOverrideHeaders spells them (--method-override).
	keepOverrides bool
	// pass holds the canonical names of --pass-header: forwarded as
	// spelled when the peer is a trusted proxy, stripped otherwise.
	pass map[string]bool
	// stripped counts what is stripped; nil counts nothing.
	stripped *strippedCounts
}

// proxy forwards to the upstream: over the direct path when the transport
// offers one and the request suits it, and through httputil.ReverseProxy
// otherwise. Both send the same request, rewritten by the forwarder.
type proxy struct {
	f       *forwarder
	direct  *upstream.Direct // nil: every request goes through reverse
	reverse *httputil.ReverseProxy
}

// newProxy returns a reverse proxy to target over transport. The request it
// sends carries:
//
//   - X-Forwarded-For: the client address the resolver found, alone. The
//     client's own X-Forwarded-For, Forwarded, X-Real-IP and every other
//     header factTable names are removed (but for what --method-override
//     and --pass-header keep), so the upstream can trust the header as
//     long as only admit reaches it.
//   - X-Forwarded-Host and X-Forwarded-Proto: the right-most element of
//     those a trusted proxy sent, the host canonical, when it is a host
//     and a scheme; or else the request's Host and the scheme admit served
//     it with. When a route names a host the front has removed the
//     proxy's X-Forwarded-Host, so the request's Host, which routes
//     matched, is sent.
//
// It carries an Upgrade only for a protocol of upgrades, and no
// HTTP2-Settings (upgrade.go); a 101 that does not switch to the protocol
// asked for, as that protocol must answer, gets the client a 502 and both
// connections are closed.
//
// An upstream that cannot be reached or fails mid-answer gets the client a
// plain 502 that names nothing internal; the cause is logged, at most once
// every 10 seconds.
//
// With admit's own transport (upstream.Transport) and a plain http target,
// requests the direct path takes go over it, in the handler's goroutine;
// the rest (upgrades, streamed or large bodies, Expect) and every request
// to an https target go through httputil.ReverseProxy and net/http's
// Transport.
func newProxy(target *url.URL, resolver *clientip.Resolver, rules headerRules, allowed upgrades, transport http.RoundTripper, log *slog.Logger) http.Handler {
	f := &forwarder{target: target, resolver: resolver, headerRules: rules, upgrades: allowed, log: log,
		failures: rate.Sometimes{Interval: 10 * time.Second}}
	p := &proxy{f: f, reverse: &httputil.ReverseProxy{
		Rewrite:        f.rewrite,
		Transport:      transport,
		BufferPool:     upstream.BufferPool(),
		ModifyResponse: checkSwitch,
		ErrorHandler:   f.fail,
		// The proxy's own log lines can name the client; keep them at Debug.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}}
	if c, ok := transport.(*upstream.Client); ok {
		p.direct = c.Direct(target, f.skip)
	}
	return p
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if x := exchangeOf(w); x != nil { // the access log times the upstream
		x.forwarding()
		defer x.forwarded()
	}
	if p.direct == nil || !p.direct.Takes(r) {
		p.reverse.ServeHTTP(w, r)
		return
	}
	xff, host, proto := p.f.forwarded(r)
	extra := [3]upstream.Field{{Name: "X-Forwarded-Host", Value: host}, {Name: "X-Forwarded-Proto", Value: proto}}
	fields := extra[:2]
	if xff != "" {
		extra[2] = upstream.Field{Name: "X-Forwarded-For", Value: xff}
		fields = extra[:]
	}
	if err := p.direct.Forward(w, r, fields); err != nil {
		p.f.fail(w, r, err)
	}
}

func (f *forwarder) rewrite(pr *httputil.ProxyRequest) {
	// Rewrite has removed X-Forwarded-For, -Host, -Proto and Forwarded from
	// pr.Out already, and the hop-by-hop headers; the other facts are left
	// to us.
	pr.SetURL(f.target)
	h := pr.Out.Header
	for name := range h {
		if f.skip(pr.In, name) {
			delete(h, name)
		}
	}
	// A trailer is a header that comes after the body, and servers merge
	// trailers into the headers (Tomcat's allowedTrailerHeaders); the
	// Transport announces Out.Trailer's names and sends the values it
	// holds. The direct path takes no request with trailers.
	for name := range pr.Out.Trailer {
		if f.skip(pr.In, name) {
			delete(pr.Out.Trailer, name)
		}
	}
	setUpgrade(h, f.upgrades.protocol(pr.In.Header))
	xff, host, proto := f.forwarded(pr.In)
	if xff != "" {
		h["X-Forwarded-For"] = []string{xff}
	}
	h["X-Forwarded-Host"] = []string{host}
	h["X-Forwarded-Proto"] = []string{proto}
}

// skip reports whether request r's header name is left out, and counts it
// if so: a name factTable matches, unless it is a method override spelled
// as admit matched it and --method-override is set, or a --pass-header name
// as spelled from a trusted proxy. Both paths ask it of every header they
// would forward, so they strip alike.
func (f *forwarder) skip(r *http.Request, name string) bool {
	row := facts.classify(name)
	if row == nil || f.keeps(r, row, name) {
		return false
	}
	f.stripped.add(row.family)
	return true
}

// keeps reports whether request r's header name, which row matches, is
// forwarded all the same.
func (f *forwarder) keeps(r *http.Request, row *factRow, name string) bool {
	if row.family == famMethodOverride && f.keepOverrides && slices.Contains(methodOverrideHeaders, name) {
		return true
	}
	return f.pass[name] && f.fromTrustedPeer(r)
}

// forwarded returns the forwarding headers' values for r: the client
// address (empty when the resolver found none), the host and the scheme.
func (f *forwarder) forwarded(r *http.Request) (xff, host, proto string) {
	if a := f.resolver.Addr(r); a.IsValid() {
		xff = a.String()
	}
	host, proto = r.Host, "http"
	if r.TLS != nil {
		proto = "https"
	}
	if f.fromTrustedPeer(r) {
		// Proxies that do not set these headers pass the client's on, and
		// those that append put their own last: only the right-most
		// element can be the trusted proxy's.
		if p := strings.ToLower(lastElement(r.Header["X-Forwarded-Proto"])); p == "http" || p == "https" {
			proto = p
		}
		if v := lastElement(r.Header["X-Forwarded-Host"]); validHost(v) {
			host = canon.Host(v, proto == "https")
		}
	}
	return xff, host, proto
}

// lastElement returns the right-most element of a comma-separated header,
// across its lines, without surrounding white space.
func lastElement(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	v := lines[len(lines)-1]
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}

// validHost reports whether v is a host and optional port as a Host header
// names them: a name of letters, digits, '-', '_' and dot-separated labels,
// or an IP literal in brackets, then ':' and digits. Anything else (a path,
// a user, an escape) is not passed on as the request's host.
func validHost(v string) bool {
	name, port := v, ""
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return false
		}
		a, err := netip.ParseAddr(v[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return false
		}
		name, port = "", v[end+1:]
	} else {
		if i := strings.LastIndexByte(v, ':'); i >= 0 {
			name, port = v[:i], v[i:]
		}
		for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
			if label == "" || strings.TrimLeft(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
				return false
			}
		}
	}
	if port == "" {
		return true
	}
	return port[0] == ':' && len(port) <= 6 && strings.Trim(port[1:], "0123456789") == ""
}

// fromTrustedPeer reports whether the request's TCP peer is a trusted proxy.
func (f *forwarder) fromTrustedPeer(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && f.resolver.Trusts(ap.Addr())
}

func (f *forwarder) fail(w http.ResponseWriter, r *http.Request, err error) {
	if x := exchangeOf(w); x != nil { // the answer is admit's, not the upstream's
		x.failed = true
	}
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
	if errors.Is(err, errSwitch) && r.ProtoMajor == 1 {
		// The client may have sent bytes of the protocol it asked for
		// after its request; none of them may be read as a request. An
		// HTTP/2 connection carries other streams, and asks for no
		// upgrade: it stays open.
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(http.StatusBadGateway)
	io.WriteString(w, "bad gateway\n")
}
