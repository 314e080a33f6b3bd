package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/routes"
)

// explainOptions are the server's settings that explain reads, with their
// environment variables, so that it runs against the server's configuration.
var explainOptions = config.Pick(config.Options, "demo", "route", "trusted-proxy", "config", "escaped-slashes", "route-folding", "method-override", "methods", "pass-header", "upstream-profile", "allow-spellings", "store", "store-fail", "replicas")

// explain is the explain subcommand: it prints the group a request would be
// admitted under, its client key, and how the key was derived. It sends
// nothing anywhere.
func explain(args []string, getenv func(string) string, out io.Writer) error {
	set := config.NewOptionSet("admit explain", explainOptions)
	fs := set.FS
	peer := fs.String("peer", "", "")
	var headers []string
	addHeader := func(v string) error { headers = append(headers, v); return nil }
	fs.Func("H", "", addHeader)
	fs.Func("header", "", addHeader)
	if err := set.Parse("admit explain", args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printExplainUsage(out)
			return nil
		}
		return usageError{Err: err}
	}
	defaultPeer := *peer == ""
	if defaultPeer {
		*peer = explainPeer
	}
	if fs.NArg() != 2 {
		return usageError{Err: errors.New("admit explain: want METHOD PATH after the flags, such as GET /l/abc")}
	}
	var c config.Config
	if err := set.Apply(getenv, &c); err != nil {
		return usageError{Err: err}
	}
	if err := c.Finish(set); err != nil {
		return usageError{Err: err}
	}
	req, err := explainRequest(fs.Arg(0), fs.Arg(1), *peer, headers)
	if err != nil {
		return usageError{Err: err}
	}
	resolver, err := clientip.New(clientip.Config{TrustedProxies: c.TrustedProxies})
	if err != nil {
		return usageError{Err: fmt.Errorf("admit explain: %w", err)}
	}
	if err := checkPassHeaders(c.PassHeaders); err != nil {
		return usageError{Err: err}
	}
	// The proxy's rules for headers, which explain applies to the
	// request's; it forwards nothing.
	fwd := &forwarder{resolver: resolver, headerRules: headerRules{keepOverrides: c.MethodOverride, pass: make(map[string]bool)}}
	for _, name := range c.PassHeaders {
		fwd.pass[name] = true
	}
	// The store as validate builds it, which never connects: its rules
	// change what a route may cost.
	st, closeStore, err := c.OfflineStore()
	if err != nil {
		return usageError{Err: err}
	}
	defer closeStore()
	door, err := admit.New(admit.Config{Budgets: config.DoorBudgets(c, st), Key: resolver.Key, MeterProvider: noop.NewMeterProvider(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return usageError{Err: fmt.Errorf("admit explain: %w", err)}
	}
	defer door.Close()
	// The server's front, whose plan of the request explain prints; it
	// serves nothing.
	none := http.NotFoundHandler()
	f, err := newFront(c, door, none, nil, new(malformedCounts), func(config.Route) (http.Handler, http.Handler) { return none, nil })
	if err != nil {
		return usageError{Err: err}
	}
	p, err := f.plan(req)
	if err != nil {
		fmt.Fprintf(out, "request  %s %s (host %s)\n", req.Method, req.RequestURI, req.Host)
		status := refusalStatus(err)
		fmt.Fprintf(out, "refused  %d %s: %v; admit answers it before routing, and it never reaches the upstream\n", status, http.StatusText(status), err)
		return nil
	}
	printExplanation(out, req, p, explained{routes: f.routes, door: door, async: c.Async, fwd: fwd, defaultPeer: defaultPeer, client: resolver.Key}, resolver.Explain(p.req))
	return nil
}

// explained is what explain prints a plan with: the routes, the door that
// would admit the request, and the groups in the async mode.
type explained struct {
	routes []frontRoute // by index in the route table
	door   *admit.Door
	async  map[admit.Group]time.Duration
	fwd    *forwarder // whose header rules apply; nil: none printed
	// defaultPeer is set when the peer is explainPeer because no --peer
	// was given.
	defaultPeer bool
	client      func(*http.Request) netip.Prefix // the door's client key, which exemptions match
}

// explainPeer is the peer explain resolves a request from without --peer:
// an address of TEST-NET-1 (RFC 5737), which is nobody's and no trusted
// proxy's unless a list trusts everything.
const explainPeer = "192.0.2.1:40000"

// asyncBound says how far replicas in the async mode may admit beyond the
// budget, as asyncquota.Bound reckons it: each replica beyond the first a
// full burst and what refills in two intervals (a fixed window: its limit
// per window), per key over any span.
func asyncBound(b admit.Budget, interval time.Duration) string {
	if b.Algorithm == admit.FixedWindow {
		return fmt.Sprintf("one replica admits as exactly as the store; each further replica up to %d calls beyond the limit per key and window", b.Limit)
	}
	if b.Rate == rate.Inf {
		return "the group has no rate limit"
	}
	extra := int64(b.Burst) + int64(math.Ceil(float64(b.Rate)*2*interval.Seconds()))
	return fmt.Sprintf("one replica admits as exactly as the store; each further replica up to %d calls beyond the budget per key over any span", extra)
}

// explainRequest builds the request explain resolves, as net/http's server
// reads a request line: target is origin-form ("/l/abc") or absolute-form
// ("http://host/l/abc"), whose host then wins over a Host header.
func explainRequest(method, target, peer string, headers []string) (*http.Request, error) {
	u, err := url.ParseRequestURI(target)
	if err != nil || !strings.HasPrefix(target, "/") && u.Host == "" {
		return nil, fmt.Errorf("admit explain: path %q: want a path such as /l/abc, or an absolute URL, as a request line holds them", target)
	}
	req := &http.Request{Method: method, URL: u, RequestURI: target, Header: http.Header{},
		Host: "localhost", RemoteAddr: peer, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("admit explain: -H %q: want \"Name: value\"", h)
		}
		value = strings.TrimSpace(value)
		if textproto.CanonicalMIMEHeaderKey(name) == "Host" {
			req.Host = value
			continue
		}
		req.Header.Add(name, value)
	}
	if u.Host != "" {
		req.Host = u.Host
	}
	return req, nil
}

var reasons = map[clientip.Reason]string{
	clientip.ReasonNonIPPeer:     "the peer is not an IP address: every such request shares one key",
	clientip.ReasonUntrustedPeer: "the peer is not a trusted proxy, so its forwarding headers are ignored and it is the client",
	clientip.ReasonNoHeader:      "the peer is a trusted proxy but sent no X-Forwarded-For entry, so it is the client",
	clientip.ReasonClient:        "the walk from the right met the first hop that is not a trusted proxy: the client",
	clientip.ReasonMalformed:     "the walk met an entry that is not an address; the trusted hop to its right is the client",
	clientip.ReasonAllTrusted:    "every hop is a trusted proxy, so the left-most is the client",
}

// printExplanation writes what admit makes of a request: the plan, then
// how its client key was found.
func printExplanation(w io.Writer, req *http.Request, p plan, x explained, e clientip.Explanation) {
	printPlan(w, req, p, x)
	printClient(w, req, e, x.defaultPeer)
	if x.fwd != nil {
		printFacts(w, req, x.fwd)
	}
}

// printFacts writes, in name order, the request's headers that claim a fact
// about the connection or the routing (factTable), and what the proxy does
// with each: replaces it with its own, strips it, or forwards it.
func printFacts(w io.Writer, req *http.Request, f *forwarder) {
	for _, name := range slices.Sorted(maps.Keys(req.Header)) {
		row := facts.classify(name)
		switch {
		case row == nil:
		case slices.Contains(writtenHeaders, name):
			fmt.Fprintf(w, "replace  %s (%s): the upstream gets admit's X-Forwarded-For, -Host and -Proto instead\n", name, row.family)
		case f.keeps(req, row, name) && row.family == famMethodOverride:
			fmt.Fprintf(w, "forward  %s (%s): --method-override\n", name, row.family)
		case f.keeps(req, row, name):
			fmt.Fprintf(w, "forward  %s (%s): --pass-header, from a trusted proxy\n", name, row.family)
		case f.pass[name]:
			fmt.Fprintf(w, "strip    %s (%s): --pass-header forwards it only from a trusted proxy, and the peer is not one\n", name, row.family)
		default:
			fmt.Fprintf(w, "strip    %s (%s): a client's claim; read as fact by %s\n", name, row.family, row.readers)
		}
	}
}

// printPlan writes the routes a request matches and the limits it is
// admitted under.
func printPlan(w io.Writer, req *http.Request, p plan, x explained) {
	fmt.Fprintf(w, "request  %s %s (host %s)\n", req.Method, req.RequestURI, req.Host)
	c := p.req
	if c.Method != req.Method || c.RequestURI != req.RequestURI || c.Host != req.Host {
		fmt.Fprintf(w, "forward  %s %s (host %s): the canonical form, which admit matches and forwards (the host as X-Forwarded-Host)\n",
			c.Method, c.RequestURI, c.Host)
	}
	if len(p.matched) == 0 {
		fmt.Fprintf(w, "group    none: no route matches, so the request passes through unlimited\n")
	}
	for i, m := range p.matched {
		r := x.routes[m.Route].r
		label := "group   "
		if i > 0 {
			label = "also    "
		}
		note := ""
		if r.Pattern == config.GRPCHealthPattern {
			note = " (the gRPC health service)"
		}
		fmt.Fprintf(w, "%s %s (route %s%s)\n", label, groupList(r.Groups), r.Pattern, note)
		if how := m.How(); how != "" {
			fmt.Fprintf(w, "matched  %s: an upstream that reads it so routes it to this route\n", how)
		}
		if host := routes.Host(r.Pattern); host != "" {
			fmt.Fprintf(w, "host     the route limits only host %s: the upstream must route by X-Forwarded-Host, since it receives its own Host, or another host reaches the same handler unlimited\n", host)
		}
	}
	if len(p.matched) > 1 {
		fmt.Fprintf(w, "stacked  every limit of every route matched applies, in order\n")
	}
	for _, g := range p.route.Groups {
		printLimit(w, x.door, g, max(p.route.Cost, 1), c)
		if by := exemptBy(x.door, g, x.client(c), c); by != "" {
			fmt.Fprintf(w, "exempt   %s: by %s: the request spends none of its tokens, and still takes a slot of its group cap\n", g, by)
		}
		printDelay(w, x.door, g)
		if interval := x.async[g]; interval > 0 {
			b, _ := x.door.Budget(g)
			fmt.Fprintf(w, "sync     %s: async, reconciled with the store every %s: %s\n", g, config.DurationText(interval), asyncBound(b, interval))
		}
	}
}

func groupList(gs []admit.Group) string {
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = string(g)
	}
	return strings.Join(names, ", ")
}

// printClient writes how a request's client key was found.
func printClient(w io.Writer, req *http.Request, e clientip.Explanation, defaultPeer bool) {
	peer := "not an IP address"
	if e.Peer.IsValid() {
		peer = e.Peer.String()
		if e.PeerTrusted {
			peer += ", a trusted proxy: its X-Forwarded-For is read"
		} else {
			peer += ", not a trusted proxy"
		}
	}
	remote := e.RemoteAddr
	if defaultPeer {
		remote += " (default; --peer sets it)"
	}
	fmt.Fprintf(w, "peer     %s -> %s\n", remote, peer)
	if e.PeerTrusted {
		for _, v := range req.Header.Values(e.Header) {
			fmt.Fprintf(w, "header   %s: %s\n", e.Header, v)
		}
	}
	if len(e.Hops) > 0 {
		fmt.Fprintf(w, "hops     right to left:\n")
		for i, h := range e.Hops {
			var what string
			switch {
			case !h.Addr.IsValid():
				what = "not an address: the walk stops"
			case h.Trusted:
				what = "trusted proxy: skipped"
			case i == len(e.Hops)-1 && e.Reason == clientip.ReasonClient:
				what = "not a trusted proxy: the client"
			default:
				what = "not a trusted proxy"
			}
			fmt.Fprintf(w, "           %-40s %s\n", h.Text, what)
		}
	}
	fmt.Fprintf(w, "why      %s: %s\n", e.Reason, reasons[e.Reason])
	if e.Addr.IsValid() {
		fmt.Fprintf(w, "client   %s\n", e.Addr)
	}
	fmt.Fprintf(w, "key      %s\n", e.Key)
}

func printExplainUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: admit explain [--peer HOST:PORT] [-H 'Name: value']... [flags] METHOD PATH\n\n"+
		"explain prints the group a request would be admitted under, its client key,\n"+
		"and how the key was derived from the peer and its X-Forwarded-For header.\n"+
		"It reads the routes and trusted proxies as the server does.\n\n"+
		"  --peer HOST:PORT\n    \tthe TCP peer of the request (or the source of its PROXY protocol header);\n    \tdefault "+explainPeer+", an address of no client and no proxy\n"+
		"  -H, --header 'Name: value'\n    \ta request header; repeatable, and repeated headers count line by line\n")
	config.PrintOptions(w, explainOptions)
}

// printLimit writes one limit of the request: its algorithm and amounts, its
// cost and its key, hashed where the client chose it.
func printLimit(w io.Writer, door *admit.Door, g admit.Group, cost int, r *http.Request) {
	b, _ := door.Budget(g)
	amount := amountText(b)
	key, err := door.KeyOf(g, r)
	switch {
	case err != nil:
		key = "none: " + err.Error() + "; admit refuses the request"
	case b.Key.Header != "" || b.Key.PathValue != "":
		if r.Header.Get(b.Key.Header) == "" && r.PathValue(b.Key.PathValue) == "" {
			key += " (the value is missing: the client key)"
		} else {
			key += " (the value's SHA-256, never the value)"
		}
	}
	fmt.Fprintf(w, "limit    %s: %s, cost %d, key %s = %s\n", g, amount, cost, config.KeyText(b.Key), key)
}

// printDelay writes, for a group with a queue, that a key's requests past
// its burst wait for their tokens, and how long at the longest.
func printDelay(w io.Writer, door *admit.Door, g admit.Group) {
	b, _ := door.Budget(g)
	if b.Queue == 0 || b.Rate == rate.Inf {
		return
	}
	fmt.Fprintf(w, "delay    %s: past its burst of %d, a key's next %d requests wait for their tokens instead of being refused, going in at %s; the longest wait is %s, and at most %d requests wait in the group at once\n",
		g, b.Burst, b.Queue, config.RateSummary(b.Rate), config.DurationText(config.LongestWait(b)), b.MaxWaiting)
}

// exemptBy names the exemption of group g that lets r, from client, past
// without spending, as the door applies them: an exempt prefix that holds
// the whole client key, or "key" for a listed key; "" for none.
func exemptBy(door *admit.Door, g admit.Group, client netip.Prefix, r *http.Request) string {
	b, _ := door.Budget(g)
	if key, err := door.KeyOf(g, r); err == nil && slices.Contains(b.ExemptKeys, key) {
		return "key (listed in " + config.FieldExemptKeysFrom + ")"
	}
	for _, p := range b.Exempt {
		if p.Bits() <= client.Bits() && p.Contains(client.Addr()) {
			return p.String()
		}
	}
	return ""
}
