package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/routes"
)

// front is the proxy's handler. Every request passes it before routing: it
// closes the connection after a request whose framing RFC 9112 calls faulty,
// puts the request into its canonical form (refusing, with 400, one that
// has none, or whose method overrides admit cannot read as one method
// each), and sends it through the door of the route it matches, or
// unlimited to the upstream. What the upstream receives is the canonical
// request the route was matched on.
type front struct {
	table     *routes.Table
	handlers  []http.Handler // per route of table: the route's door in front of its handler
	routes    []frontRoute   // per route of table: what its handler is made of
	door      *admit.Door
	rest      http.Handler // the proxy, unlimited
	canon     canon.Options
	overrides bool     // read method override headers as further methods to match
	methods   []string // the methods forwarded (--methods); any other is refused with 501
	// matchedHost drops a trusted proxy's X-Forwarded-Host when a route
	// names a host, so that the upstream is told the host admit matched
	// (see the proxy's rewrite): fronts pass a client's X-Forwarded-Host on
	// unless told otherwise, and an upstream routing by it would otherwise
	// serve a limited host's route to a request admit matched elsewhere.
	matchedHost bool
	malformed   *malformedCounts
	access      *accessLog // nil: off
	// exact refuses a request that the front would change before
	// forwarding (its canonical form, a header it drops): in admit auth the
	// front forwards the client's request as it is, so admit may only admit
	// what it judged in that very form.
	exact bool

	keyHeadersOnce sync.Once
	keyHeaders     spellings // the headers the door's groups are keyed by
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.access == nil {
		f.serve(w, r, nil)
		return
	}
	// With an access log the request is served through its exchange,
	// which measures it. A panic leaves the exchange to the collector,
	// since a writer may still hold it.
	x := f.access.begin(w)
	f.serve(x, r, x)
	f.access.end(x)
}

// serve serves r, measured by x when the access log is on (nil: off).
func (f *front) serve(w http.ResponseWriter, r *http.Request, x *exchange) {
	if faultyFraming(r) {
		w.Header()["Connection"] = closeValue
	}
	var found [routes.MaxSpellings]routes.Match
	// The matches are kept apart from the request, which escapes, so that
	// found stays on the stack.
	c, matched, err := f.match(w, r, found[:0])
	if err != nil {
		f.refuse(w, r, x, err)
		return
	}
	if x != nil {
		f.access.track(c, x)
		defer f.access.untrack(c)
	}
	switch {
	case len(matched) == 0:
		f.rest.ServeHTTP(w, c)
	case len(matched) == 1:
		f.handlers[matched[0].Route].ServeHTTP(w, c)
	default:
		// Built per request, since such requests are rare and caching
		// every combination would let requests grow memory.
		_, h := f.combined(matched)
		h.ServeHTTP(w, c)
	}
}

// plan is what the front makes of a request, once, for the server to serve
// and for explain to print: its canonical form, the routes it matched and
// the limits it is admitted under.
type plan struct {
	req     *http.Request  // the canonical request: what is matched, keyed and forwarded
	matched []routes.Match // in the table's order; none: the request passes unlimited
	route   admit.Route    // the limits and cost of the routes matched, combined
}

// plan is the front's plan of r, for explain.
func (f *front) plan(r *http.Request) (plan, error) {
	c, matched, err := f.match(nil, r, nil) // no writer: no form body is read for a _method override
	if err != nil || len(matched) == 0 {
		return plan{req: c}, err
	}
	p := plan{req: c, matched: matched, route: f.routes[matched[0].Route].rt}
	if len(matched) > 1 {
		p.route, _ = f.combined(matched)
	}
	return p, nil
}

// match canonicalises r and matches it, returning the canonical request
// and the routes it matches, into found: the error is why the request has
// no canonical form (or no one method), and it is answered 400. w, when not
// nil, lets a form body be read for a _method override.
func (f *front) match(w http.ResponseWriter, r *http.Request, found []routes.Match) (*http.Request, []routes.Match, error) {
	c, err := canon.Request(r, f.canon)
	if err != nil {
		return nil, nil, err
	}
	if f.exact && c != r {
		return nil, nil, errNotAsForwarded
	}
	if !slices.Contains(f.methods, c.Method) {
		return nil, nil, errMethodNotServed
	}
	// A key header's underscore spelling would reach a CGI or WSGI app as
	// the header itself, a value admit never keyed by; it is dropped, as
	// nginx drops every header with an underscore by default.
	if h := f.keySpellings().strip(c.Header); h != nil {
		if f.exact {
			return nil, nil, errNotAsForwarded
		}
		c = withHeader(c, r, h)
	}
	if h := dropConnectionNamed(c.Header); h != nil {
		if f.exact {
			return nil, nil, errNotAsForwarded
		}
		c = withHeader(c, r, h)
	}
	if f.matchedHost && len(c.Header["X-Forwarded-Host"]) > 0 {
		if f.exact {
			return nil, nil, errNotAsForwarded
		}
		h := c.Header.Clone()
		delete(h, "X-Forwarded-Host")
		c = withHeader(c, r, h)
	}
	var overrides []string
	if f.overrides {
		if overrides, err = overrideMethods(c.Header); err != nil {
			return nil, nil, err
		}
		for _, m := range overrides {
			if !slices.Contains(f.methods, m) {
				return nil, nil, errMethodNotServed // the app would run the request as m
			}
		}
	}
	matched, err := f.table.Match(w, c, overrides, found)
	if err != nil || len(matched) == 0 {
		return c, matched, err
	}
	// The limits of every route matched key by that route's own
	// wildcards, as its spelling matched them; a name an earlier route
	// set keeps the earlier value.
	for i, m := range matched {
		names := f.routes[m.Route].pathKeys
		if len(names) == 0 {
			continue
		}
		for j, v := range f.table.PathValues(m, names) {
			if i == 0 || c.PathValue(names[j]) == "" {
				c.SetPathValue(names[j], v)
			}
		}
	}
	// What the access log names the request by: the route, never the
	// path, which may be a share link's secret.
	c.Pattern = f.routes[matched[0].Route].r.Pattern
	return c, matched, nil
}

// withHeader returns c with header h, copying c first when it is still the
// server's request r.
func withHeader(c, r *http.Request, h http.Header) *http.Request {
	if c == r {
		c = new(http.Request)
		*c = *r
	}
	c.Header = h
	return c
}

// refuse answers a request admit cannot read one way with 400, or one under
// a method it does not forward with 501, and closes an HTTP/1 connection
// after it. An HTTP/2 connection stays: net/http would turn Connection:
// close into a GOAWAY for every stream on it, which a balancer may
// multiplex for many clients.
// x, when the access log is on, measured the answer, which is logged.
func (f *front) refuse(w http.ResponseWriter, r *http.Request, x *exchange, err error) {
	reason := f.malformed.add(err)
	status := refusalStatus(err)
	if r.ProtoMajor == 1 {
		w.Header()["Connection"] = closeValue
	}
	http.Error(w, http.StatusText(status)+": "+err.Error(), status)
	if f.access != nil {
		f.access.malformed(r, x, reason, status)
	}
}

// errMethodNotServed refuses a method outside --methods, TRACE and others
// that an app's view may run unasked, with 501: RFC 9110 answers a method
// a server does not implement for any resource so, while 405 would claim
// to know, in its Allow header, what the target resource allows.
var errMethodNotServed = errors.New("the method is not one admit forwards (--methods); TRACE and CONNECT never are")

// errNotAsForwarded refuses, in admit auth, a request the proxy would
// change before forwarding: the front forwards it unchanged, so the app
// would run a form admit never matched.
var errNotAsForwarded = errors.New("the request is not in the form admit matches, which is the form the front forwards: its path is not canonical, or it carries a header the proxy would drop")

// refusalStatus is the status a request refused before routing gets.
func refusalStatus(err error) int {
	if errors.Is(err, errMethodNotServed) {
		return http.StatusNotImplemented
	}
	return http.StatusBadRequest
}

// keySpellings returns the headers the door's groups are keyed by.
func (f *front) keySpellings() spellings {
	f.keyHeadersOnce.Do(func() {
		var names []string
		for _, g := range f.door.Groups() {
			if b, _ := f.door.Budget(g); b.Key.Header != "" {
				names = append(names, b.Key.Header)
			}
		}
		f.keyHeaders = newSpellings(names)
	})
	return f.keyHeaders
}

// frontRoute is a route as the front serves it.
type frontRoute struct {
	r        config.Route // as the configuration gives it
	rt       admit.Route
	next     http.Handler
	pathKeys []string // the wildcards its limits are keyed by
}

// combined returns the route of a request whose spellings match several
// routes, as upstreams that fold case or slashes may route it to any of
// them: the first route's overflow, under every limit of every route
// matched, in order, at the highest cost, or the most every limit holds
// when that is less; and the first route's handler under it.
func (f *front) combined(matched []routes.Match) (admit.Route, http.Handler) {
	first := f.routes[matched[0].Route]
	rt := admit.Route{Cost: first.rt.Cost, Overflow: first.rt.Overflow, Buffer: first.rt.Buffer}
	for _, m := range matched {
		for _, g := range f.routes[m.Route].rt.Groups {
			if !slices.Contains(rt.Groups, g) { // all of them: dropping one would let this spelling walk around it
				rt.Groups = append(rt.Groups, g)
			}
		}
		rt.Cost = max(rt.Cost, f.routes[m.Route].rt.Cost)
	}
	h, err := f.door.Handler(rt, first.next)
	if err != nil {
		// The highest cost is more than some limit holds: charge the
		// most that every limit holds rather than drop that limit. Each
		// route was accepted alone, so one token always is.
		rt.Cost = maxCost(func(cost int) bool {
			rt := rt
			rt.Cost = cost
			_, err := f.door.Handler(rt, first.next)
			return err == nil
		}, rt.Cost)
		h, _ = f.door.Handler(rt, first.next)
	}
	return rt, h
}

// maxCost returns the highest cost from 1 to below over that accepts, which
// accepts 1 and every cost below one it accepts.
func maxCost(accepts func(int) bool, over int) int {
	lo, hi := 1, over
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; accepts(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// closeValue is a shared header value; handlers never modify it.
var closeValue = []string{"close"}[:1:1]

// faultyFraming reports a request after which the connection must close
// (RFC 9112 §6.1, §6.3). net/http hides both signals: it deletes
// Content-Length beside Transfer-Encoding, and ignores and deletes
// Transfer-Encoding on HTTP/1.0. So every HTTP/1.0 request, and every
// chunked HTTP/1.x request, closes its connection: a body framed two ways
// can then never be read as a next request.
func faultyFraming(r *http.Request) bool {
	return r.ProtoMajor == 1 && (r.ProtoMinor == 0 || len(r.TransferEncoding) > 0)
}

// errAmbiguousOverride refuses method overrides admit cannot match as the
// app would run them.
var errAmbiguousOverride = fmt.Errorf("the method override headers must name one method a line, in at most %d lines", routes.MaxOverrides)

// overrideMethods returns the methods the method override headers name,
// upper-cased as the override middlewares of Express and others do; blank
// lines name none. A value that is not one method admit serves (a list such
// as "GET,POST", of which Express runs the first, or not a token), or more
// lines than admit looks up, is errAmbiguousOverride: the app might run the
// request as a method admit never matched.
func overrideMethods(h http.Header) ([]string, error) {
	var ms []string
	for _, name := range methodOverrideHeaders {
		for _, v := range h[name] {
			m := strings.ToUpper(strings.TrimSpace(v))
			switch {
			case m == "":
			case !canon.IsToken(m) || canon.Method(m) != nil || len(ms) == routes.MaxOverrides:
				return nil, errAmbiguousOverride
			default:
				ms = append(ms, m)
			}
		}
	}
	return ms, nil
}
