package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/internal/canon"
)

// explainOptions are the server's settings that explain reads, with their
// environment variables, so that it runs against the server's configuration.
var explainOptions = pick(options, "demo", "route", "trusted-proxy", "config", "escaped-slashes", "route-folding", "method-override", "upstream-profile", "allow-spellings", "store", "store-fail", "replicas")

// explain is the explain subcommand: it prints the group a request would be
// admitted under, its client key, and how the key was derived. It sends
// nothing anywhere.
func explain(args []string, getenv func(string) string, out io.Writer) error {
	set := newOptionSet("admit explain", explainOptions)
	fs := set.fs
	peer := fs.String("peer", "", "")
	var headers []string
	addHeader := func(v string) error { headers = append(headers, v); return nil }
	fs.Func("H", "", addHeader)
	fs.Func("header", "", addHeader)
	if err := set.parse("admit explain", args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printExplainUsage(out)
			return nil
		}
		return usageError{err}
	}
	if *peer == "" {
		return usageError{errors.New("admit explain: --peer is required: the address the request comes from, as admit would see it (host:port)")}
	}
	if fs.NArg() != 2 {
		return usageError{errors.New("admit explain: want METHOD PATH after the flags, such as GET /l/abc")}
	}
	var c config
	if err := set.apply(getenv, &c); err != nil {
		return usageError{err}
	}
	if err := c.finish(set); err != nil {
		return usageError{err}
	}
	req, err := explainRequest(fs.Arg(0), fs.Arg(1), *peer, headers)
	if err != nil {
		return usageError{err}
	}
	resolver, err := clientip.New(clientip.Config{TrustedProxies: c.TrustedProxies})
	if err != nil {
		return usageError{fmt.Errorf("admit explain: %w", err)}
	}
	table, err := newRouteTable(withGRPCHealth(c.Routes), c.matching())
	if err != nil {
		return usageError{err}
	}
	canonical, err := canon.Request(req, canon.Options{Slashes: c.EscapedSlashes, Allow: c.AllowSpellings})
	if err != nil {
		fmt.Fprintf(out, "request  %s %s (host %s)\n", req.Method, req.RequestURI, req.Host)
		fmt.Fprintf(out, "refused  400 Bad Request: %v; admit answers it before routing, and it never reaches the upstream\n", err)
		return nil
	}
	var overrides []string
	if c.MethodOverride {
		if overrides, err = overrideMethods(canonical.Header); err != nil {
			fmt.Fprintf(out, "request  %s %s (host %s)\n", req.Method, req.RequestURI, req.Host)
			fmt.Fprintf(out, "refused  400 Bad Request: %v; admit answers it before routing, and it never reaches the upstream\n", err)
			return nil
		}
	}
	// The store as validate builds it, which never connects: its rules
	// change what a route may cost.
	st, closeStore, err := c.offlineStore()
	if err != nil {
		return usageError{err}
	}
	defer closeStore()
	door, err := admit.New(admit.Config{Budgets: doorBudgets(c, st), Key: resolver.Key, MeterProvider: noop.NewMeterProvider(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return usageError{fmt.Errorf("admit explain: %w", err)}
	}
	defer door.Close()
	matched, _ := table.matchWithParams(nil, canonical, overrides, nil) // the query's _method: explain sends no body
	// As the front does: each route's limits key by its own wildcards.
	for i, m := range matched {
		var names []string
		for _, g := range table.routes[m.index].Groups {
			if b, _ := door.Budget(g); b.Key.PathValue != "" {
				names = append(names, b.Key.PathValue)
			}
		}
		for j, v := range table.pathValues(canonical.Host, m, names) {
			if i == 0 || canonical.PathValue(names[j]) == "" {
				canonical.SetPathValue(names[j], v)
			}
		}
	}
	printExplanation(out, req, canonical, explained{table: table, matched: matched, door: door, async: c.Async}, resolver.Explain(canonical))
	return nil
}

// explained is what explain found for a request: the routes it matched,
// the door that would admit it, and the groups in the async mode.
type explained struct {
	table   *routeTable
	matched []routeMatch
	door    *admit.Door
	async   map[admit.Group]time.Duration
}

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

func printExplanation(w io.Writer, req, canonical *http.Request, x explained, e clientip.Explanation) {
	fmt.Fprintf(w, "request  %s %s (host %s)\n", req.Method, req.RequestURI, req.Host)
	if canonical != req {
		fmt.Fprintf(w, "forward  %s %s (host %s): the canonical form, which admit matches and forwards (the host as X-Forwarded-Host)\n",
			canonical.Method, canonical.RequestURI, canonical.Host)
	}
	if len(x.matched) == 0 {
		fmt.Fprintf(w, "group    none: no route matches, so the request passes through unlimited\n")
	}
	var limits []admit.Group
	cost := 1
	for i, m := range x.matched {
		r := x.table.routes[m.index]
		label, names := "group   ", make([]string, len(r.Groups))
		if i > 0 {
			label = "also    "
		}
		for j, g := range r.Groups {
			names[j] = string(g)
			if !slices.Contains(limits, g) {
				limits = append(limits, g)
			}
		}
		cost = max(cost, r.cost())
		note := ""
		if r.Pattern == grpcHealthPattern {
			note = " (the gRPC health service)"
		}
		fmt.Fprintf(w, "%s %s (route %s%s)\n", label, strings.Join(names, ", "), r.Pattern, note)
		if how := m.sp.explained(); how != "" {
			fmt.Fprintf(w, "matched  %s: an upstream that reads it so routes it to this route\n", how)
		}
		if host := parsePattern(r.Pattern).host; host != "" {
			fmt.Fprintf(w, "host     the route limits only host %s: the upstream must route by X-Forwarded-Host, since it receives its own Host, or another host reaches the same handler unlimited\n", host)
		}
	}
	if len(x.matched) > 1 {
		fmt.Fprintf(w, "stacked  every limit of every route matched applies, in order\n")
		if _, err := x.door.Handler(admit.Route{Groups: limits, Cost: cost}, http.NotFoundHandler()); err != nil {
			cost = maxCost(func(c int) bool {
				_, err := x.door.Handler(admit.Route{Groups: limits, Cost: c}, http.NotFoundHandler())
				return err == nil
			}, cost)
		}
	}
	for _, g := range limits {
		printLimit(w, x.door, g, cost, canonical)
		if interval := x.async[g]; interval > 0 {
			b, _ := x.door.Budget(g)
			fmt.Fprintf(w, "sync     %s: async, reconciled with the store every %s: %s\n", g, durationText(interval), asyncBound(b, interval))
		}
	}
	peer := "not an IP address"
	if e.Peer.IsValid() {
		peer = e.Peer.String()
		if e.PeerTrusted {
			peer += ", a trusted proxy: its X-Forwarded-For is read"
		} else {
			peer += ", not a trusted proxy"
		}
	}
	fmt.Fprintf(w, "peer     %s -> %s\n", e.RemoteAddr, peer)
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
	fmt.Fprint(w, "Usage: admit explain --peer HOST:PORT [-H 'Name: value']... [flags] METHOD PATH\n\n"+
		"explain prints the group a request would be admitted under, its client key,\n"+
		"and how the key was derived from the peer and its X-Forwarded-For header.\n"+
		"It reads the routes and trusted proxies as the server does.\n\n"+
		"  --peer HOST:PORT\n    \tthe TCP peer of the request (or the source of its PROXY protocol header)\n"+
		"  -H, --header 'Name: value'\n    \ta request header; repeatable, and repeated headers count line by line\n")
	printOptions(w, explainOptions)
}

// printLimit writes one limit of the request: its algorithm and amounts, its
// cost and its key, hashed where the client chose it.
func printLimit(w io.Writer, door *admit.Door, g admit.Group, cost int, r *http.Request) {
	b, _ := door.Budget(g)
	amount := fmt.Sprintf("token-bucket %s/s, burst %d", rateText(b.Rate), b.Burst)
	if b.Rate == rate.Inf {
		amount = "token-bucket without a rate limit"
	}
	if b.Algorithm == admit.FixedWindow {
		amount = fmt.Sprintf("fixed-window %d per %s", b.Limit, durationText(b.Window))
	}
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
	fmt.Fprintf(w, "limit    %s: %s, cost %d, key %s = %s\n", g, amount, cost, keyText(b.Key), key)
}
