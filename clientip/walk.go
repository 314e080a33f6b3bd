package clientip

import (
	"net/http"
	"net/netip"
	"strings"
)

// resolve finds the client address of req: the peer, or, for a trusted peer,
// the right-most untrusted hop of its forwarding header. It returns the zero
// Addr for a non-IP peer. Key, Addr and Explain share it; e is nil on the
// hot path, and when it is not nil resolve records each step in it and calls
// no hooks.
func (r *Resolver) resolve(req *http.Request, e *Explanation) netip.Addr {
	peer, ok := parseNode(req.RemoteAddr, false)
	if e != nil {
		e.RemoteAddr = req.RemoteAddr
		e.Peer = peer
	}
	if !ok {
		e.stop(ReasonNonIPPeer)
		return netip.Addr{}
	}
	if !r.trusts(peer) {
		if e == nil && local(peer) {
			// Either header betrays a forgotten proxy, whichever one this
			// Resolver reads.
			if len(req.Header[headerXFF]) > 0 {
				r.untrusted(headerXFF)
			} else if len(req.Header[headerForwarded]) > 0 {
				r.untrusted(headerForwarded)
			}
		}
		e.stop(ReasonUntrustedPeer)
		return peer
	}
	if e != nil {
		e.PeerTrusted = true
		e.Header = r.header
	}
	w := walker{r: r, e: e, last: peer}
	lines := req.Header[r.header]
	if r.forwarded {
		w.forwarded(lines)
	} else {
		w.xff(lines)
	}
	if !w.done {
		if w.seen {
			w.finish(ReasonAllTrusted, w.last)
		} else {
			w.finish(ReasonNoHeader, peer)
		}
	}
	return w.addr
}

// walker is the state of one walk from the right.
type walker struct {
	r    *Resolver
	e    *Explanation // nil on the hot path
	last netip.Addr   // the last trusted hop seen, the peer at first
	seen bool         // some non-empty entry was examined
	done bool         // the walk stopped; addr is the answer
	addr netip.Addr
}

// hop examines one entry, right to left. a and ok are its parsed address; text
// is what the header said. It reports whether the walk stops.
func (w *walker) hop(text string, a netip.Addr, ok bool) bool {
	w.seen = true
	trusted := ok && w.r.trusts(a)
	if w.e != nil {
		w.e.Hops = append(w.e.Hops, Hop{Text: text, Addr: a, Trusted: trusted})
	}
	switch {
	case !ok:
		// Whatever is left of garbage was written by someone we cannot
		// vouch for: key the last hop we trust.
		w.finish(ReasonMalformed, w.last)
	case !trusted:
		w.finish(ReasonClient, a)
	default:
		w.last = a
	}
	return w.done
}

func (w *walker) finish(reason Reason, a netip.Addr) {
	w.done = true
	w.addr = a
	w.e.stop(reason)
}

// xff walks X-Forwarded-For: all lines joined in wire order, split on
// commas, from the right. Entries left of the answer are never parsed.
func (w *walker) xff(lines []string) {
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for line != "" {
			entry := line
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				entry, line = line[j+1:], line[:j]
			} else {
				line = ""
			}
			entry = trimOWS(entry)
			if entry == "" {
				continue
			}
			a, ok := parseNode(entry, false)
			if w.hop(entry, a, ok) {
				return
			}
		}
	}
}

// forwarded walks the for= parameters of RFC 7239 Forwarded elements from
// the right. Elements left of the answer are split but never parsed.
func (w *walker) forwarded(lines []string) {
	var buf [16]span // enough for most chains without allocating
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		spans := splitElements(line, buf[:0])
		for k := len(spans) - 1; k >= 0; k-- {
			elem := trimOWS(line[spans[k].start:spans[k].end])
			if elem == "" {
				continue
			}
			v, ok := forValue(elem)
			var a netip.Addr
			if ok {
				a, ok = parseNode(v, true)
			}
			if w.hop(elem, a, ok) {
				return
			}
		}
	}
}

// trimOWS trims the spaces and tabs HTTP allows around list elements.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
