package admit

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/quota"
)

// Config configures a [Door]. The zero Config enforces [DefaultBudgets] on the
// TCP peer's address.
type Config struct {
	// Budgets overrides the budget of the groups it names; groups it does not
	// name keep their defaults, and a group not among the defaults is added.
	// nil: DefaultBudgets().
	Budgets map[Group]Budget
	// Disabled turns on shadow mode: no request is rejected for its rate or
	// in-flight limits; a request that enforcement would have rejected
	// proceeds without taking a slot or a token and counts as its would_*
	// outcome. The body cap and read deadline still apply.
	Disabled bool
	// Key returns the client key of a request. nil: the TCP peer masked to /32
	// (IPv4) or /64 (IPv6). Behind a proxy use a clientip.Resolver configured
	// with the proxy's addresses; never a function that trusts a header by
	// itself, since any client can set one.
	Key func(*http.Request) netip.Prefix
	// Now is the clock the buckets refill by. nil: the system's monotonic
	// clock, which a wall-clock step cannot move.
	Now func() time.Time
	// Logger receives lifecycle events and throttled store failures, never a
	// line per request. nil: slog.Default().
	Logger *slog.Logger
	// MeterProvider provides the door's instruments. nil: the global one.
	MeterProvider metric.MeterProvider
	// PolicyHeaders adds the IETF draft RateLimit-Policy and RateLimit fields
	// to the answers of admitted requests and of rate_limited refusals (not
	// to in-flight refusals or overflow answers), for example
	// `RateLimit-Policy: "link";q=20;w=20` and `RateLimit: "link";r=3;t=17`.
	PolicyHeaders bool
}

// Door admits requests to route groups. It is safe for concurrent use.
type Door struct {
	groups   map[Group]*group
	key      func(*http.Request) netip.Prefix
	now      func() int64 // nanoseconds on the buckets' time line
	logger   *slog.Logger
	meters   *meters
	disabled bool
	headers  bool
}

// New validates cfg and returns a door. An error names the group and the field
// at fault.
func New(cfg Config) (*Door, error) {
	budgets := DefaultBudgets()
	for g, b := range cfg.Budgets {
		budgets[g] = b
	}
	d := &Door{
		groups:   make(map[Group]*group, len(budgets)),
		key:      cfg.Key,
		now:      timeline(cfg.Now),
		logger:   cfg.Logger,
		disabled: cfg.Disabled,
		headers:  cfg.PolicyHeaders,
	}
	if d.logger == nil {
		d.logger = slog.Default()
	}
	if d.key == nil {
		peer, err := clientip.New(clientip.Config{})
		if err != nil {
			return nil, err
		}
		d.key = peer.Key
	}
	names := slices.Sorted(func(yield func(Group) bool) {
		for g := range budgets {
			if !yield(g) {
				return
			}
		}
	})
	now := d.now()
	for _, name := range names {
		b := budgets[name]
		if err := b.validate(name); err != nil {
			return nil, err
		}
		d.groups[name] = newGroup(name, b, now)
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(quota.MeterName)
	m, err := newMeters(meter)
	if err == nil {
		err = m.register(meter, d.groups)
	}
	if err != nil {
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	d.meters = m
	if d.disabled {
		d.logger.Info("admit: limits disabled; counting would_* outcomes only (shadow mode)")
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
	if d.meters.registration == nil {
		return nil
	}
	return d.meters.registration.Unregister()
}

// UntrustedXFF counts one request whose forwarding headers came from an
// untrusted loopback or private peer; pass it as clientip.Config.OnUntrusted.
func (d *Door) UntrustedXFF() {
	d.meters.untrustedN.Add(1)
}

// Groups returns the names of the door's groups, sorted.
func (d *Door) Groups() []Group {
	names := make([]Group, 0, len(d.groups))
	for g := range d.groups {
		names = append(names, g)
	}
	slices.Sort(names)
	return names
}

// Budget returns the budget group g enforces, and whether the door knows g.
func (d *Door) Budget(g Group) (Budget, bool) {
	grp, ok := d.groups[g]
	if !ok {
		return Budget{}, false
	}
	return grp.budget, true
}

// Wrap returns a handler that admits requests to next under group g's budget.
// A request over budget is served by overflow when it is not nil, and
// otherwise answered 429 or 503 with Retry-After. Wrap panics if the door does
// not know g or next is nil, at wiring time, as http.ServeMux.Handle does with
// a bad pattern.
func (d *Door) Wrap(g Group, next, overflow http.Handler) http.Handler {
	grp, ok := d.groups[g]
	if !ok {
		panic(fmt.Sprintf("admit: Wrap: unknown group %q (known: %v)", g, d.Groups()))
	}
	if next == nil {
		panic(fmt.Sprintf("admit: Wrap: nil handler for group %q", g))
	}
	return &handler{door: d, group: grp, next: next, overflow: overflow}
}
