package clientip

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/meter"
)

// Header names, in the canonical form net/http stores them in.
const (
	headerXFF       = "X-Forwarded-For"
	headerForwarded = "Forwarded"
)

// Config says whom a [Resolver] believes. The zero Config trusts nobody: the
// key is the TCP peer.
type Config struct {
	// TrustedProxies lists the peers whose forwarding header is believed, and
	// the hops inside that header that are skipped as proxies. Empty means
	// none: every forwarding header is ignored. A /0 prefix is refused. Mapped
	// IPv4 prefixes (::ffff:10.0.0.0/104) are read as IPv4 (10.0.0.0/8).
	//
	// List only proxies you operate or pay for. A trusted proxy must
	// overwrite or append to X-Forwarded-For (or Forwarded); a trusted
	// address that passes the header through untouched lets any client
	// choose its own key.
	TrustedProxies []netip.Prefix

	// Forwarded selects the RFC 7239 Forwarded header instead of
	// X-Forwarded-For. The other header is then ignored, even when the
	// chosen one is missing. False means X-Forwarded-For.
	Forwarded bool

	// IPv6Bits is how many leading bits of an IPv6 address make its key. One
	// host usually holds a whole /64, so keying single addresses would give
	// it 2^64 buckets. Zero means 64; 32 to 128 are allowed. IPv4 keys are
	// always /32.
	IPv6Bits int

	// MeterProvider provides the admit.clientip.ignored_forwarding counter:
	// requests in which an untrusted loopback, private, shared
	// (100.64.0.0/10) or link-local peer sent a forwarding header, most
	// likely a local proxy or tunnel the operator forgot to trust. The
	// header is ignored either way. nil: the global meter provider.
	MeterProvider metric.MeterProvider

	// Logger receives one warning per Resolver the first time such a
	// request arrives. It never carries a client address. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Resolver turns a request into the client's address and the key a rate
// limiter buckets it under. It trusts the headers of listed proxies only and
// walks them from the right, so a client cannot choose its own key. A
// Resolver is safe for concurrent use; its zero value is not usable, call
// [New].
type Resolver struct {
	trusted4  []netip.Prefix // IPv4 prefixes of Config.TrustedProxies
	trusted6  []netip.Prefix // IPv6 prefixes of Config.TrustedProxies
	header    string         // the header the walk reads
	forwarded bool           // header is Forwarded, not X-Forwarded-For
	bits6     int            // IPv6 key width
	ignored   metric.Int64Counter
	logger    *slog.Logger

	warned atomic.Bool // set once the untrusted-peer warning is logged
}

// New validates cfg and returns a Resolver. It refuses a /0 or invalid
// trusted prefix and an IPv6Bits outside 32..128. It copies
// cfg.TrustedProxies, so later changes to that slice have no effect.
func New(cfg Config) (*Resolver, error) {
	r := &Resolver{
		header:    headerXFF,
		forwarded: cfg.Forwarded,
		bits6:     cfg.IPv6Bits,
		logger:    cfg.Logger,
	}
	if r.forwarded {
		r.header = headerForwarded
	}
	if r.bits6 == 0 {
		r.bits6 = 64
	}
	if r.bits6 < 32 || r.bits6 > 128 {
		return nil, fmt.Errorf("clientip: IPv6Bits %d out of range 32..128", cfg.IPv6Bits)
	}
	if r.logger == nil {
		r.logger = slog.Default()
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	var err error
	r.ignored, err = mp.Meter(meter.Name).Int64Counter("admit.clientip.ignored_forwarding",
		metric.WithDescription("Requests whose forwarding header came from an untrusted loopback, private or link-local peer and was ignored: most likely a proxy the configuration forgot to trust."),
		metric.WithUnit("{request}"))
	if err != nil {
		return nil, fmt.Errorf("clientip: metrics: %w", err)
	}
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("clientip: invalid trusted proxy %v", p)
		}
		p, err := canonicalPrefix(p)
		if err != nil {
			return nil, err
		}
		if p.Addr().Is4() {
			r.trusted4 = append(r.trusted4, p)
		} else {
			r.trusted6 = append(r.trusted6, p)
		}
	}
	return r, nil
}

// Key returns the key to bucket req under: the client address masked to /32
// (IPv4) or Config.IPv6Bits (IPv6). Requests whose peer is not an IP address
// (a Unix socket, an empty RemoteAddr) all share [NonIPKey]. Key does not
// allocate for a request without forwarding headers or with a short chain.
func (r *Resolver) Key(req *http.Request) netip.Prefix {
	return r.mask(r.resolve(req, nil))
}

// Addr returns the client address, unmasked: the peer, or the right-most
// untrusted hop of a trusted peer's forwarding header. It is the zero Addr
// when the peer is not an IP address.
func (r *Resolver) Addr(req *http.Request) netip.Addr {
	return r.resolve(req, nil)
}

// NonIPKey returns the key shared by every request whose peer is not an IP
// address: 0.0.0.0/32. The unspecified address is never a client, so the key
// collides with none.
func NonIPKey() netip.Prefix {
	return netip.PrefixFrom(netip.IPv4Unspecified(), 32)
}

// mask cuts a to its key.
func (r *Resolver) mask(a netip.Addr) netip.Prefix {
	switch {
	case !a.IsValid():
		return NonIPKey()
	case a.Is4():
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(r.bits6) // cannot fail: a has no zone, bits6 is checked
	return p
}

// Trusts reports whether a is one of the resolver's trusted proxies, after
// the canonical form every address is compared in: an IPv4-mapped address
// unmapped, a zone dropped. The server's other checks of a trusted peer (its
// connection caps, the forwarding headers it passes on) ask it, so that the
// trust is decided in one place.
func (r *Resolver) Trusts(a netip.Addr) bool { return r.trusts(a.Unmap().WithZone("")) }

// trusts reports whether a, canonical, is inside a trusted prefix.
func (r *Resolver) trusts(a netip.Addr) bool {
	list := r.trusted6
	if a.Is4() {
		list = r.trusted4
	}
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// shared is 100.64.0.0/10 (RFC 6598): carrier-grade NAT and tailnets.
var shared = netip.MustParsePrefix("100.64.0.0/10")

// local reports whether a is an address a forgotten proxy or tunnel would
// connect from.
func local(a netip.Addr) bool {
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || shared.Contains(a)
}

// untrusted reports an untrusted local peer that sent a forwarding header.
func (r *Resolver) untrusted(header string) {
	r.ignored.Add(context.Background(), 1)
	if !r.warned.Load() && r.warned.CompareAndSwap(false, true) {
		r.logger.Warn("clientip: ignored a forwarding header from an untrusted loopback or private peer; if a proxy or tunnel runs there, add its address to the trusted proxies",
			"header", header)
	}
}
