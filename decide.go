package admit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"
)

// Verdict is the door's answer to [Door.Decide]: what [Door.Handler] would
// have answered the request.
type Verdict struct {
	// Status is 200 when every limit admitted the request; otherwise what
	// Handler answers: 429 or 503 when a limit refused it, 400 or 401 when a
	// limit could not key it (a missing value its group rejects, a header
	// sent twice, a malformed Basic credential); 499 when the request's
	// context ended while it waited for a token (see Budget.Queue), outcome
	// delay_abandoned.
	Status int
	// Group is the limit that refused; "" when admitted.
	Group Group
	// Outcome is the outcome the door counts, as the admit.door.outcome
	// attribute spells it ("rate_limited", "client_concurrency"). For an
	// admitted request it is "ok", "delayed" when it waited for its token,
	// or what a limit left pending: shadow
	// mode's would_* or store_error when a limit's store could not decide
	// and its policy let the request in; the status the request ends with
	// settles the rest.
	Outcome string
	// Header holds what Handler would send: Retry-After on a 429 or 503
	// with the group's RefusalHeaders, the rate-limit fields of a rate_limited refusal, and those of an
	// admitted request when its limits send them (see Budget.FieldsOnAdmitted).
	Header http.Header
	// Waited is how long the request waited for the tokens it reserved
	// (see Budget.Queue); 0 when it waited for none.
	Waited time.Duration
}

// Decide admits one request of a front that is not an http.Handler (a gRPC
// server, a message consumer) under rt's limits, with the groups, tables,
// stores and fallback that Handler uses, and answers as Handler would.
// client is the request's client key, as a clientip.Resolver finds it; it
// is narrowed to at most /32 (IPv4) or /64 (IPv6), so that a caller passing
// whole addresses cannot give one host a bucket per address. header holds
// the values that limits keyed by a header read, under names in any case
// (gRPC metadata converts to it as it is); a limit keyed by a path value
// finds none. rt.Overflow must be nil: the
// caller answers a refusal itself. The body cap, read deadline and hold bound
// are the caller's to apply. Under a group with a Queue, Decide blocks while
// the request waits for its token (Queue/Rate at the longest), and returns
// status 499 with a nil done if ctx ends first.
//
// When the request is admitted, done is not nil, and the caller must call
// it once the request is answered (deferred, so that a panic calls it too)
// with the HTTP status the request ended with (for gRPC, the status its
// code maps to): it frees the request's in-flight slots and charges a
// ChargeOnFailure group for a 4xx. A second call does
// nothing. The error is the route's, as Handler's, and no request is
// counted.
func (d *Door) Decide(ctx context.Context, rt Route, client netip.Prefix, header http.Header) (v Verdict, done func(status int), err error) {
	if rt.Overflow != nil {
		return Verdict{}, nil, fmt.Errorf("admit: route %v: Decide takes no Overflow: its caller answers a refusal", rt.Groups)
	}
	if !client.IsValid() {
		return Verdict{}, nil, errors.New("admit: Decide: the client key is not a prefix")
	}
	h, err := d.route(rt)
	if err != nil {
		return Verdict{}, nil, err
	}
	header = canonical(header)
	p := passes.Get().(*pass)
	ck := clientKey{key: narrow(client), found: true}
	v.Header = make(http.Header)
	if i, err := h.admitAll(ctx, nil, header, &ck, false, p); err != nil {
		g := h.limits[i]
		v.Status, v.Group, v.Outcome = g.keyRefused(err), g.name, outcomeMissingKey.String()
		passes.Put(p)
		h.tell(nil, g, outcomeMissingKey, v.Status)
		return v, nil, nil
	} else if i >= 0 && p.verdicts[i].outcome == outcomeDelayAbandoned {
		g := h.limits[i]
		v.Status, v.Group, v.Outcome, v.Waited = statusClientGone, g.name, outcomeDelayAbandoned.String(), p.waited
		h.abandoned(nil, g, &p.tickets[i])
		passes.Put(p)
		return v, nil, nil
	} else if i >= 0 {
		g, verd := h.limits[i], p.verdicts[i]
		v.Status, v.Group, v.Outcome, v.Waited = h.refused(v.Header, g, &p.tickets[i], verd), g.name, verd.outcome.String(), p.waited
		// The caller owns the header; Handler's shares its values.
		v.Header = v.Header.Clone()
		passes.Put(p)
		h.tell(nil, g, verd.outcome, v.Status)
		return v, nil, nil
	}
	tickets, verdicts := p.tickets, p.verdicts
	v.Status, v.Outcome, v.Waited = http.StatusOK, outcomeOK.String(), p.waited
	for _, verd := range verdicts {
		if verd.outcome != outcomeOK {
			v.Outcome = verd.outcome.String()
			break
		}
	}
	if h.fields {
		h.addFields(v.Header, tickets, verdicts)
	}
	var once atomic.Bool
	return v, func(status int) {
		if once.Swap(true) {
			return
		}
		h.settle(ctx, nil, tickets, verdicts, status, 0)
		passes.Put(p)
	}, nil
}

// canonical returns h with every name in its canonical form, as the
// limits look names up: gRPC metadata, for one, holds them in lower case,
// and a key header missed would fall back to the client's key. h is copied
// only when a name is not canonical already.
func canonical(h http.Header) http.Header {
	for name := range h {
		if http.CanonicalHeaderKey(name) != name {
			c := make(http.Header, len(h))
			for name, vs := range h {
				k := http.CanonicalHeaderKey(name)
				c[k] = append(c[k], vs...)
			}
			return c
		}
	}
	return h
}

// narrow masks a client key to at most the width the door keys a client by.
func narrow(p netip.Prefix) netip.Prefix {
	a := p.Addr().Unmap()
	bits := min(p.Bits(), 64)
	if a.Is4() {
		bits = min(p.Bits(), 32)
		if p.Addr().Is4In6() {
			bits = min(p.Bits()-96, 32)
		}
	}
	// A key of no bits is a hash's (hashKey), never a client's.
	n, _ := a.Prefix(max(bits, 1))
	return n
}
