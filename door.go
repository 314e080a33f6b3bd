package admit

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/internal/meter"
)

// Config configures a [Door]. The zero Config enforces [DefaultBudgets] on the
// TCP peer's address.
type Config struct {
	// Budgets sets the budget of the groups it names, field by field: a
	// zero field keeps the group's default, and a group that is not built in
	// is added. Groups it does not name keep their defaults. nil: the
	// defaults.
	Budgets map[Group]Budget
	// Shadow turns on shadow mode: no request is rejected for its rate or
	// in-flight caps; a request that enforcement would have rejected
	// proceeds without taking a slot or a token and counts as its would_*
	// outcome. The body cap, read deadline and hold bound still apply.
	Shadow bool
	// Key returns the client key of a request. nil: the TCP peer masked to /32
	// (IPv4) or /64 (IPv6). Behind a proxy use a clientip.Resolver configured
	// with the proxy's addresses; never a function that trusts a header by
	// itself, since any client can set one.
	Key func(*http.Request) netip.Prefix
	// Now is the clock the buckets refill by. nil: the system's monotonic
	// clock, which a wall-clock step cannot move. A request that waits
	// for its token (Budget.Queue) is timed by the runtime's timers, so a
	// Now that does not run at their pace (as the system's clock and a
	// testing/synctest bubble's do) shifts when it goes in, never how many
	// tokens it spends.
	Now func() time.Time
	// Logger receives lifecycle events and throttled store failures, never a
	// line per request. nil: slog.Default().
	Logger *slog.Logger
	// MeterProvider provides the door's instruments. nil: the global one.
	MeterProvider metric.MeterProvider
	// PolicyHeaders adds every group's rate-limit fields (see
	// Budget.XRateLimit) to the answers of its admitted requests too, as
	// Budget.FieldsOnAdmitted does for one group: for example
	// `RateLimit-Policy: "link";q=20;w=20` and `RateLimit: "link";r=3;t=17`.
	// A rate_limited refusal carries them whatever it says; in-flight
	// refusals and overflow answers never do.
	PolicyHeaders bool
	// Decided, when set, is called for each request the door decides, once
	// it is answered: for every limit of an admitted request, and for the
	// limit that refused a refused one (the others gave back what they
	// took), with its group, its
	// outcome as the admit.door.outcome attribute spells it, and the
	// status of the answer (200 when the handler wrote none; 499 for a
	// request whose client left while it waited for a token). It runs on the
	// request's goroutine, so it must be quick; an access log is its use.
	// r is nil for a request Door.Decide decided, which has none.
	// nil: nothing is called.
	Decided func(r *http.Request, g Group, outcome string, status int)
	// Waited, when set, is called when a request has waited for a token
	// of group g (see Budget.Queue), with how long on the runtime's clock,
	// which its timer runs by, once the wait ends: its token has refilled,
	// or its context ended first. It runs on the
	// request's goroutine, before Decided tells how the request ended; r
	// is nil for a request Door.Decide decided. nil: nothing is called.
	Waited func(r *http.Request, g Group, wait time.Duration)
}

// Door admits requests to route groups. It is safe for concurrent use.
type Door struct {
	groups map[Group]*group
	set    *settings
	meters *meters
}

// settings are the door-wide settings every group reads.
type settings struct {
	key     func(*http.Request) netip.Prefix
	now     func() int64 // nanoseconds on the buckets' time line
	logger  *slog.Logger
	shadow  bool
	headers bool                                                       // Config.PolicyHeaders
	wall    func() int64                                               // Unix time in seconds, for X-RateLimit-Reset
	decided func(r *http.Request, g Group, outcome string, status int) // nil: none
	waited  func(r *http.Request, g Group, wait time.Duration)         // nil: none
}

// New validates cfg and returns a door. A refused budget is a
// [*BudgetError] naming the group and the field at fault; with several
// groups at fault the error joins one for each, in the order of their
// names (errors.Join), so that a front can report the one its user gave
// first.
func New(cfg Config) (*Door, error) {
	set := &settings{key: cfg.Key, now: timeline(cfg.Now), logger: cfg.Logger, shadow: cfg.Shadow, headers: cfg.PolicyHeaders, decided: cfg.Decided, waited: cfg.Waited}
	set.wall = func() int64 { return time.Now().Unix() }
	if cfg.Now != nil {
		set.wall = func() int64 { return cfg.Now().Unix() }
	}
	if set.logger == nil {
		set.logger = slog.Default()
	}
	if set.key == nil {
		peer, err := clientip.New(clientip.Config{})
		if err != nil {
			return nil, err
		}
		set.key = peer.Key
	}
	budgets, err := cfg.budgets()
	if err != nil {
		return nil, err
	}
	d := &Door{groups: make(map[Group]*group, len(budgets)), set: set}
	now := set.now()
	for _, b := range budgets {
		d.groups[b.name] = newGroup(b.name, b.Budget, set, now)
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m, err := newMeters(mp.Meter(meter.Name), d.groups)
	if err != nil {
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	d.meters = m
	if set.shadow {
		set.logger.Info("admit: shadow mode: limits count would_* outcomes and reject nothing")
	}
	return d, nil
}

// timeline returns the door's time line in nanoseconds: now's Unix time, or,
// without now, the monotonic time since the door was made. Buckets only ever
// compare two readings, and a monotonic reading costs one clock read where
// time.Now costs two (wall and monotonic).
func timeline(now func() time.Time) func() int64 {
	if now != nil {
		return func() int64 { return now().UnixNano() }
	}
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// Close stops reporting the door's gauges. The door keeps admitting.
func (d *Door) Close() error {
	return d.meters.registration.Unregister()
}

// Groups returns the names of the door's groups, sorted.
func (d *Door) Groups() []Group {
	return slices.Sorted(maps.Keys(d.groups))
}

// Budget returns the budget group g enforces, every field resolved, and
// whether the door knows g.
func (d *Door) Budget(g Group) (Budget, bool) {
	grp, ok := d.groups[g]
	if !ok {
		return Budget{}, false
	}
	return grp.budget, true
}

// Route is what a handler is admitted under: every limit of Groups, checked
// in order, each spending Cost. A request is admitted only when every limit
// admits it; one that a limit refuses is answered as that limit says, and
// the limits before it get back what it spent there, so an abusive client
// refused by its own limit leaves a budget it shares with others untouched.
// The route's body cap, read deadline and hold bound are the strictest of
// its groups'.
type Route struct {
	// Groups are the route's limits, 1 or more, each at most once. A
	// request through a route of up to 8 admits without allocating.
	Groups []Group
	// Cost is what a request spends in each limit; 0 means 1. It may not
	// exceed a limit's Burst (or a fixed window's Limit).
	Cost int
	// Overflow, when set, serves the requests a limit refuses instead of the
	// 429 or 503, in at most that limit's Inflight slots at once.
	Overflow http.Handler
	// Buffer, when set, has the door read a request's whole body, up to
	// the route's body cap, before the request takes its groups' in-flight
	// slots, as nginx's proxy_request_buffering does: meanwhile it holds
	// its client's slot and its tokens, but no slot of a group, so clients
	// that send their bodies slowly cannot keep the group from others.
	// The bodies being read are bounded per group to Inflight times
	// MaxBodyBytes (as many bytes as the group's admitted bodies may
	// hold); a request that would take them past that is answered 503,
	// as is one that finds no group slot once its body has arrived. A
	// body cut meanwhile (see MinBodyRate) is answered 408, or 400 for one
	// cut short, and one over the cap 413. A route without a body cap
	// reads nothing ahead. The proxy buffers every route; a handler of
	// its own that streams its body (a large upload written as it comes)
	// leaves Buffer off, and then a body that arrives slowly holds the
	// group's slot until its rate or deadline cuts it.
	Buffer bool
}

// Handler returns a handler that admits requests to next under rt. It
// refuses, with a [*BudgetError], a route that names no group or an unknown
// one, costs more than a limit holds, or whose every limit is keyed by a
// value the client chooses (a header or a path value, without
// Key.Authenticated): such a route would give a forger a fresh budget per
// value.
func (d *Door) Handler(rt Route, next http.Handler) (http.Handler, error) {
	if next == nil {
		return nil, fmt.Errorf("admit: route %v: nil handler", rt.Groups)
	}
	h, err := d.route(rt)
	if err != nil {
		return nil, err
	}
	h.next, h.overflow = next, rt.Overflow
	h.buffer = rt.Buffer && h.maxBody > 0
	return h, nil
}

// route returns the limits of rt, checked as Handler documents, without
// the handlers they admit to.
func (d *Door) route(rt Route) (*handler, error) {
	if len(rt.Groups) == 0 {
		return nil, routeError(rt.Groups, "", "Groups", "no {Groups}, want 1 or more")
	}
	cost := max(rt.Cost, 1)
	if rt.Cost < 0 {
		return nil, routeError(rt.Groups, "", "Cost", "{Cost} %d, want 1 or more (0: 1)", rt.Cost)
	}
	h := &handler{cost: int32(cost), shadow: d.set.shadow, now: d.set.now, decided: d.set.decided, waited: d.set.waited}
	chosen := true
	for _, name := range rt.Groups {
		g, ok := d.groups[name]
		switch {
		case !ok:
			return nil, routeError(rt.Groups, name, "Groups", "unknown group %q (known: %v)", name, d.Groups())
		case slices.Contains(h.limits, g):
			return nil, routeError(rt.Groups, name, "Groups", "group %q is listed twice", name)
		case cost > g.budget.Burst && g.budget.Algorithm == FixedWindow:
			return nil, routeError(rt.Groups, name, "Cost", "{Cost} %d is more than group %q ever admits (its {Limit} is %d)", cost, name, g.budget.Limit)
		case cost > g.budget.Burst:
			return nil, routeError(rt.Groups, name, "Cost", "{Cost} %d is more than group %q ever admits (its {Burst} is %d)", cost, name, g.budget.Burst)
		case !g.budget.decidesOnStore() && cost > g.budget.SharedBurst:
			return nil, routeError(rt.Groups, name, "Cost", "{Cost} %d is more than group %q admits from its shared bucket, which serves clients once its table is full (its {SharedBurst} is %d)", cost, name, g.budget.SharedBurst)
		case g.fallbackBurst() > 0 && cost > g.fallbackBurst():
			// The fallback holds the smaller of its two shares: name that one.
			b, f := g.budget, g.budget.fallback()
			if f.Burst <= f.SharedBurst {
				return nil, routeError(rt.Groups, name, "Cost", "{Cost} %d is more than group %q admits on one replica while the store is down ({Burst} %d divided by {Replicas} %d is %d)", cost, name, b.Burst, b.Replicas, f.Burst)
			}
			return nil, routeError(rt.Groups, name, "Cost", "{Cost} %d is more than group %q admits from its shared bucket on one replica while the store is down ({SharedBurst} %d divided by {Replicas} %d is %d)", cost, name, b.SharedBurst, b.Replicas, f.SharedBurst)
		}
		h.limits = append(h.limits, g)
		chosen = chosen && g.budget.Key.chosen()
		h.fields = h.fields || g.fields.admitted
		h.delays = h.delays || g.budget.Queue > 0
		h.maxBody = strictest(h.maxBody, g.budget.MaxBodyBytes)
		h.rule.Timeout = strictest(h.rule.Timeout, g.budget.ReadTimeout)
		if rate := g.budget.MinBodyRate; rate > 0 {
			// Each part the strictest, whatever the order, so that a body
			// the route passes passes each group's rule on its own; a
			// group with a rate has a grace (see Budget.validate).
			h.rule.MinRate = max(h.rule.MinRate, rate)
			h.rule.Grace = strictest(h.rule.Grace, g.budget.BodyRateGrace)
		}
		h.hold = strictest(h.hold, g.budget.HoldTimeout)
	}
	if chosen {
		return nil, routeError(rt.Groups, "", "Key", "every limit of the route is keyed by a value the client chooses ({ChosenKeys}), so a forger gets a fresh budget per value: stack a limit keyed by {Peer}, or set {Authenticated} on a group whose value a layer in front of admit (a gateway, an authenticating proxy) checks first: a check in the app runs only after admit has admitted the request, so it needs the limit keyed by {Peer}")
	}
	return h, nil
}

// strictest returns the smaller of two positive bounds; a bound of 0 or
// less is none.
func strictest[T int64 | time.Duration](a, b T) T {
	switch {
	case b <= 0:
		return a
	case a <= 0:
		return b
	}
	return min(a, b)
}

// Wrap returns a handler that admits requests to next under group g's budget.
// A request over budget is served by overflow when it is not nil, and
// otherwise answered 429 or 503 with Retry-After. Wrap panics where Handler
// would return an error (an unknown group, a nil next, a group keyed by a
// value the client chooses), at wiring time, as http.ServeMux.Handle does
// with a bad pattern.
func (d *Door) Wrap(g Group, next, overflow http.Handler) http.Handler {
	h, err := d.Handler(Route{Groups: []Group{g}, Overflow: overflow}, next)
	if err != nil {
		panic(err.Error())
	}
	return h
}

// Middleware returns group g's door as middleware, for chains of
// func(http.Handler) http.Handler such as chi's r.With or alice: each handler
// it wraps is admitted under g's budget, and a request over budget is
// answered 429 or 503 with Retry-After. It panics as Wrap does.
func (d *Door) Middleware(g Group) func(http.Handler) http.Handler {
	if _, err := d.Handler(Route{Groups: []Group{g}}, http.NotFoundHandler()); err != nil {
		panic(err.Error())
	}
	return func(next http.Handler) http.Handler { return d.Wrap(g, next, nil) }
}

// namedBudget is a group's budget, resolved, with the group's name.
type namedBudget struct {
	name Group
	Budget
}

// budgets returns the budget of every group cfg makes, the built-in groups
// included, resolved, in the order of their names; the error joins one for
// each group refused, naming the group and field at fault, so that a
// front can report the one its user gave first.
func (cfg Config) budgets() ([]namedBudget, error) {
	all := make(map[Group]Budget, len(defaults)+len(cfg.Budgets))
	for g := range defaults {
		all[g] = Budget{}
	}
	maps.Copy(all, cfg.Budgets)
	out := make([]namedBudget, 0, len(all))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(all)) {
		b, err := all[name].resolve(name)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, namedBudget{name, b})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
