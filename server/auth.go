package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
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
// matches: reaching it is the decision to admit.
var admitted = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if res := resultOf(r); res != nil {
		res.admitted = true
	}
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
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !a.s.resolver.Trusts(peer.Addr()) {
		a.refuse(w, http.StatusForbidden, authUntrusted)
		return
	}
	orig, err := forwardedRequest(r)
	if err != nil {
		a.refuse(w, http.StatusBadRequest, authMalformed)
		return
	}
	res := new(authResult)
	orig = orig.WithContext(context.WithValue(r.Context(), authResultKey{}, res))
	rec := &authRecorder{header: make(http.Header)}
	a.s.gen.Load().front.ServeHTTP(rec, orig)
	h := w.Header()
	if res.admitted {
		outcome := res.outcome
		if outcome == "" {
			outcome = authUnlimited
		}
		copyAnswer(h, rec.header)
		h.Set(admitStatus, outcome)
		w.WriteHeader(http.StatusOK)
		return
	}
	outcome := res.outcome
	if outcome == "" { // refused before the door: the front's 400 or 501
		outcome = authMalformed
	}
	copyAnswer(h, rec.header)
	a.answer(w, rec.status, outcome, rec.body.Bytes())
}

// refuse answers a request admit auth could not judge.
func (a *authFront) refuse(w http.ResponseWriter, status int, outcome string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	a.answer(w, status, outcome, []byte(http.StatusText(status)+": "+outcome+"\n"))
}

// answer writes a refusal: status and body, or with --deny-status that
// status and no body. A front that needs the deny status (nginx's
// auth_request) makes its own answer and reads no body of admit's, which
// would cost the connection to admit: nginx closes an upstream
// connection whose answer it did not read to the end.
func (a *authFront) answer(w http.ResponseWriter, status int, outcome string, body []byte) {
	h := w.Header()
	h.Set(admitStatus, outcome)
	if a.deny != 0 {
		status, body = a.deny, nil
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// copyAnswer copies the fields the door and the front wrote into dst, the
// answer to the front, but for those about the connection to the front.
func copyAnswer(dst, src http.Header) {
	for name, vs := range src {
		if hop.Header(name) || name == "Content-Length" {
			continue
		}
		dst[name] = vs
	}
}

// errForwarded refuses a forwarded request admit cannot read as one
// request.
var errForwarded = errors.New("the front's forwarded request is not one request")

// forwardedRequest is the original request r tells of: the method and
// target of exactly one family, each field once, the host and scheme it
// names, and r's other fields as the front passed them on, but for those
// about the hop from the front to admit. Its peer is the front, so the
// client is found in X-Forwarded-For by the trusted-proxy rules, as the
// proxy finds it. Its body is one admit cannot see: a forward-auth request
// carries none, so a "_method" in a POST's form body could name any method.
func forwardedRequest(r *http.Request) (*http.Request, error) {
	fwd, orig := present(r.Header, forwardedFamily), present(r.Header, originalFamily)
	if fwd && orig {
		return nil, errForwarded // two tellings of one request: neither is believed
	}
	for _, name := range append(forwardedFamily, originalFamily...) {
		if len(r.Header[name]) > 1 {
			return nil, errForwarded
		}
	}
	var method, target, host, scheme string
	switch {
	case fwd:
		method, target = r.Header.Get("X-Forwarded-Method"), r.Header.Get("X-Forwarded-Uri")
		host, scheme = r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Proto")
	case orig:
		method, target = r.Header.Get("X-Original-Method"), r.Header.Get("X-Original-Uri")
		if u := r.Header.Get("X-Original-Url"); u != "" {
			if target != "" {
				return nil, errForwarded
			}
			abs, err := url.Parse(u)
			if err != nil || abs.Host == "" || abs.Scheme != "http" && abs.Scheme != "https" {
				return nil, errForwarded
			}
			host, scheme, target = abs.Host, abs.Scheme, abs.RequestURI()
			if abs.ForceQuery || strings.HasSuffix(u, "?") {
				target += "?"
			}
		}
	default:
		return nil, errForwarded
	}
	if method == "" || target == "" || !canon.IsToken(method) {
		return nil, errForwarded
	}
	if host == "" {
		host = r.Host
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || u.Host != "" || !strings.HasPrefix(target, "/") {
		return nil, errForwarded // origin form only: an absolute target is the front's to resolve
	}
	c := &http.Request{
		Method:     method,
		URL:        u,
		Proto:      r.Proto,
		ProtoMajor: r.ProtoMajor,
		ProtoMinor: r.ProtoMinor,
		Header:     make(http.Header, len(r.Header)),
		Body:       routes.UnseenBody,
		Host:       canon.Host(host, scheme == "https"),
		RemoteAddr: r.RemoteAddr,
		RequestURI: target,
	}
	for name, vs := range r.Header {
		if hop.Header(name) || isFamily(name) || name == "Content-Length" {
			continue
		}
		c.Header[name] = vs
	}
	return c, nil
}

// present reports whether h holds a field of family.
func present(h http.Header, family []string) bool {
	for _, name := range family {
		if _, ok := h[name]; ok {
			return true
		}
	}
	return false
}

// isFamily reports whether name is a field of either family.
func isFamily(name string) bool {
	for _, f := range [][]string{forwardedFamily, originalFamily} {
		for _, n := range f {
			if n == name {
				return true
			}
		}
	}
	return false
}

// authRecorder holds the answer the front and the door gave a forwarded
// request, for admit auth to answer from. Nothing but admit writes to it,
// and the door's answers are small, so its body is bounded by what admit
// writes.
type authRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *authRecorder) Header() http.Header { return w.header }

func (w *authRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *authRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
