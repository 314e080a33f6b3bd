package server

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/internal/hop"
	"github.com/admitgo/admit/server/routes"
)

// The header families a front tells admit auth the original request in.
// Caddy's forward_auth and Traefik's ForwardAuth send the first, nginx's
// auth_request the second as its documented configurations set it, and
// ingress-nginx an absolute X-Original-URL.
var (
	forwardedFamily = []string{"X-Forwarded-Method", "X-Forwarded-Uri", "X-Forwarded-Host", "X-Forwarded-Proto"}
	originalFamily  = []string{"X-Original-Method", "X-Original-Uri", "X-Original-Url"}
)

// Admit-Status names the outcome of every answer of admit auth, admitted or
// refused, so that a front can log it or map it (nginx's auth_request_set).
const admitStatus = "Admit-Status"

// The outcomes admit auth answers beside the door's own.
const (
	// authUntrusted: the peer is not a --trusted-proxy, so nothing it says
	// of the original request is believed.
	authUntrusted = "untrusted_front"
	// authMalformed: the forwarded request is not one request admit can
	// read (both families, a header twice, no method or URI), or the front
	// refused it before routing as the proxy does (no canonical form, or a
	// form the front would forward other than admit matched it).
	authMalformed = "malformed"
	// authUnlimited: no route matches, so no limit applies.
	authUnlimited = "unlimited"
	// authOK: every limit admitted it.
	authOK = "ok"
)

// authFront answers a front's forward-auth requests: it reads the original
// request from the forwarding headers of a trusted front, judges it as the
// proxy would (canonical form, routes, the door), and answers 200 to admit
// it or the door's refusal, with its Retry-After, and Admit-Status always.
type authFront struct {
	s    *server
	deny int // the status of every refusal; 0: the door's or the front's own
	// The answers to a request refused before it is judged, made once:
	// from a peer that is not a --trusted-proxy, and one that does not
	// tell one request.
	refusedBefore [2]authAnswer
}

// newAuthFront is s's decision front, whose refusals answer deny (0: the
// door's or the front's own status).
func newAuthFront(s *server, deny int) *authFront {
	a := &authFront{s: s, deny: deny}
	a.refusedBefore = [2]authAnswer{a.refusal(http.StatusForbidden, authUntrusted), a.refusal(http.StatusBadRequest, authMalformed)}
	return a
}

// authResult is what serving one forwarded request found: whether it
// reached the admitted handler, and the outcome the door told.
type authResult struct {
	admitted bool
	outcome  string
}

type authResultKey struct{}

// resultOf returns the result slot of a request admit auth serves; nil for
// any other.
func resultOf(r *http.Request) *authResult {
	res, _ := r.Context().Value(authResultKey{}).(*authResult)
	return res
}

// admitted is the handler behind every route and for the requests no route
// matches: reaching it is the decision to admit. It answers 200 as an app
// would, since the door adds an admitted answer's rate-limit fields
// (--policy-headers) as its head goes out.
var admitted = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if res := resultOf(r); res != nil {
		res.admitted = true
	}
	w.WriteHeader(http.StatusOK)
})

// tellAuth records a door's outcome on the request's result: the refusing
// limit's, or for an admitted request the last limit's that was not ok
// (shadow mode's would_*, fallback, exempted).
func tellAuth(r *http.Request, outcome string) {
	if r == nil {
		return
	}
	if res := resultOf(r); res != nil && (res.outcome == "" || outcome != authOK) {
		res.outcome = outcome
	}
}

func (a *authFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.trusts(r.RemoteAddr) {
		a.answer(w, a.refuseBefore(r, errUntrusted))
		return
	}
	var orig http.Request // on the stack: decide copies it once
	if err := forwardedRequest(&orig, r); err != nil {
		a.answer(w, a.refuseBefore(r, errForwarded))
		return
	}
	a.answer(w, a.decide(r.Context(), &orig))
}

// trusts reports whether peer (address:port), the front asking, is a
// --trusted-proxy, whose telling of the original request admit believes.
func (a *authFront) trusts(peer string) bool {
	p, err := netip.ParseAddrPort(peer)
	return err == nil && a.s.resolver.Trusts(p.Addr())
}

// decide judges orig, the original request a front told of, as the proxy
// would (canonical form, routes, the door), under ctx: the one decision of
// admit auth, whichever protocol the front asked in. orig is copied once,
// into the request the front serves, so a caller may build it on its
// stack.
func (a *authFront) decide(ctx context.Context, orig *http.Request) authAnswer {
	// The recorder is the request's context too, carrying the result the
	// door tells: one allocation for both.
	rec := &authRecorder{Context: ctx}
	a.s.gen.Load().front.ServeHTTP(rec, orig.WithContext(rec))
	res := &rec.res
	if res.admitted {
		outcome := cmp.Or(res.outcome, authUnlimited)
		return authAnswer{admitted: true, status: http.StatusOK, outcome: outcome, fields: rec.fields(outcome)}
	}
	// An outcome not told was refused before the door: the front's 400 or 501.
	outcome := cmp.Or(res.outcome, authMalformed)
	// A request the door answered nothing (its client, the front, left)
	// still gets a status, should anyone read it.
	status := cmp.Or(rec.status, http.StatusServiceUnavailable)
	return a.denied(authAnswer{status: status, outcome: outcome, fields: rec.fields(outcome), body: rec.body})
}

// errUntrusted refuses a request from a peer that is not a
// --trusted-proxy: nothing it tells of the original request is believed.
var errUntrusted = errors.New("the peer is not a --trusted-proxy")

// refuseBefore is the answer to a request admit auth refused before
// judging it, for err (errUntrusted or errForwarded), counted in
// admit.server.malformed and, when r is not nil and the access log is on,
// logged as a malformed request is.
func (a *authFront) refuseBefore(r *http.Request, err error) authAnswer {
	ans := a.refusedBefore[1]
	if err == errUntrusted {
		ans = a.refusedBefore[0]
	}
	reason := a.s.malformed.add(err)
	if r != nil && a.s.access != nil {
		a.s.access.malformed(r, nil, reason, ans.status)
	}
	return ans
}

// errForwarded refuses a forwarded request admit cannot read as one
// request.
var errForwarded = errors.New("the front's forwarded request is not one request")

// forwardedRequest makes c the original request r tells of: the method and
// target of exactly one family, each field once, the host and scheme it
// names, and r's other fields as the front passed them on, but for those
// about the hop from the front to admit. Its peer is the front, so the
// client is found in X-Forwarded-For by the trusted-proxy rules, as the
// proxy finds it. Its body is one admit cannot see: a forward-auth request
// carries none, so a "_method" in a POST's form body could name any method.
func forwardedRequest(c, r *http.Request) error {
	t := readTelling(r.Header)
	if t.fwd && t.orig || t.repeated {
		return errForwarded // two tellings of one request: neither is believed
	}
	switch {
	case t.fwd:
	case t.orig:
		// nginx's documented configuration sets Host to the original's;
		// an absolute X-Original-URL names it instead.
		t.host = r.Host
		if t.url != "" {
			if t.target != "" {
				return errForwarded
			}
			abs, err := url.Parse(t.url)
			if err != nil || abs.Host == "" || abs.Scheme != "http" && abs.Scheme != "https" {
				return errForwarded
			}
			t.host, t.scheme, t.target = abs.Host, abs.Scheme, abs.RequestURI()
			if abs.ForceQuery || strings.HasSuffix(t.url, "?") {
				t.target += "?"
			}
		}
	default:
		return errForwarded
	}
	// Without X-Forwarded-Host the X-Forwarded family tells of a request
	// without a host (HTTP/1.0 without Host, which HAProxy passes on), and
	// the Host admit was asked under names admit, not the app: refused,
	// since routes that name a host could not be matched as the app's
	// default host would serve it.
	if t.host == "" {
		return errForwarded
	}
	if err := originalRequest(c, r, t.method, t.target, t.host, t.scheme); err != nil {
		return err
	}
	family := forwardedFamily
	if t.orig {
		family = originalFamily
	}
	for _, name := range family {
		delete(c.Header, name) // the front's telling, which the app never receives
	}
	if t.hop {
		dropHopFields(c.Header)
	}
	return nil
}

// telling is what a forward-auth request's fields tell of the original
// request, read in one walk of them.
type telling struct {
	method, target, host, scheme, url string
	fwd, orig                         bool // a field of the X-Forwarded, the X-Original family is present
	repeated                          bool // a field of either is present twice
	hop                               bool // a field about the hop from the front to admit is present
}

// readTelling reads h's telling of the original request, changing
// nothing, so that a request refused still shows what it carried.
func readTelling(h http.Header) (t telling) {
	for name, vs := range h {
		var dst *string
		switch name {
		case "X-Forwarded-Method", "X-Original-Method":
			dst = &t.method
		case "X-Forwarded-Uri", "X-Original-Uri":
			dst = &t.target
		case "X-Forwarded-Host":
			dst = &t.host
		case "X-Forwarded-Proto":
			dst = &t.scheme
		case "X-Original-Url":
			dst = &t.url
		default:
			t.hop = t.hop || hop.Header(name) || name == "Content-Length"
			continue
		}
		if strings.HasPrefix(name, "X-Forwarded-") {
			t.fwd = true
		} else {
			t.orig = true
		}
		t.repeated = t.repeated || len(vs) > 1
		if len(vs) > 0 {
			*dst = vs[0]
		}
	}
	return t
}

// dropHopFields removes from h the fields about one hop, hop-by-hop and
// Content-Length: those of the front's request to admit, which the app
// never receives from the front, and those of admit's answer, which the
// front's own answer sets.
func dropHopFields(h http.Header) {
	for name := range h {
		if hop.Header(name) || name == "Content-Length" {
			delete(h, name)
		}
	}
}

// originalRequest makes c the request told tells of: method on target, which
// must be in origin form (an absolute target is the front's to resolve), at
// host over scheme, with told's protocol, peer and fields. It takes told's
// header map: told is admit's own request, which nothing reads once it is
// answered, so its fields become the original's in place; the caller drops
// those about the hop from the front to admit.
func originalRequest(c, told *http.Request, method, target, host, scheme string) error {
	if method == "" || target == "" || !canon.IsToken(method) {
		return errForwarded
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || u.Host != "" || !strings.HasPrefix(target, "/") {
		return errForwarded
	}
	*c = http.Request{
		Method:     method,
		URL:        u,
		Proto:      told.Proto,
		ProtoMajor: told.ProtoMajor,
		ProtoMinor: told.ProtoMinor,
		Header:     told.Header,
		Body:       routes.UnseenBody(),
		Host:       canon.Host(host, scheme == "https"),
		RemoteAddr: told.RemoteAddr,
		RequestURI: target,
	}
	return nil
}
