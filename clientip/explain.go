package clientip

import (
	"net/http"
	"net/netip"
)

// Explanation tells how a [Resolver] derived a request's key, for operators
// checking their proxy setup. The zero value explains nothing.
type Explanation struct {
	RemoteAddr  string     // the request's RemoteAddr, as received
	Peer        netip.Addr // RemoteAddr canonicalised; the zero Addr if it is not an IP
	PeerTrusted bool       // the peer is a trusted proxy, so its header was read
	Header      string     // the header read; empty when the peer is not trusted
	Hops        []Hop      // the header's entries examined, right to left
	Reason      Reason     // why the walk stopped where it did
	Addr        netip.Addr // the client address, as Resolver.Addr returns it
	Key         netip.Prefix
}

// Hop is one header entry the walk examined.
type Hop struct {
	// Text is the entry as it appeared, trimmed: an X-Forwarded-For entry
	// or a whole Forwarded element.
	Text string
	// Addr is the canonical address (unmapped, without zone); the zero
	// Addr when the entry is malformed.
	Addr    netip.Addr
	Trusted bool // Addr is inside a trusted prefix, so the walk went on
}

// Reason says why a walk stopped.
type Reason string

const (
	// ReasonNonIPPeer: the peer is not an IP address; the key is NonIPKey.
	ReasonNonIPPeer Reason = "non-ip-peer"
	// ReasonUntrustedPeer: the peer is not a trusted proxy, so its
	// headers were ignored and it is the client.
	ReasonUntrustedPeer Reason = "untrusted-peer"
	// ReasonNoHeader: the trusted peer sent no non-empty entry; it is the
	// client.
	ReasonNoHeader Reason = "no-header"
	// ReasonClient: the walk met the first untrusted hop: the client.
	ReasonClient Reason = "untrusted-hop"
	// ReasonMalformed: the walk met an entry that is not an address; the
	// last trusted hop to its right is the client.
	ReasonMalformed Reason = "malformed-hop"
	// ReasonAllTrusted: every hop is trusted; the left-most is the client.
	ReasonAllTrusted Reason = "all-trusted"
)

// Explain resolves req as Key does and records each step. It allocates and
// does not count or log untrusted peers; keep it off the request path.
func (r *Resolver) Explain(req *http.Request) Explanation {
	var e Explanation
	e.Addr = r.resolve(req, &e)
	e.Key = r.mask(e.Addr)
	return e
}

// stop records the reason a walk stopped. It does nothing on a nil
// Explanation, so the hot path can call it unconditionally.
func (e *Explanation) stop(reason Reason) {
	if e != nil {
		e.Reason = reason
	}
}
