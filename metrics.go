package admit

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// outcome is what the door did with one request; every request counts exactly
// one outcome in admit.door.requests.
type outcome uint8

// Outcomes, as the admit.door.outcome attribute spells them.
const (
	outcomeOK                     outcome = iota // admitted; the handler answered 1xx-3xx
	outcomeClientError                           // admitted; the handler answered 4xx
	outcomeServerError                           // admitted; the handler answered 5xx or panicked
	outcomeRateLimited                           // 429: no token
	outcomeClientConcurrency                     // 429: the client cap
	outcomeGroupConcurrency                      // 503: the group cap
	outcomeCached                                // over budget, served by the overflow handler
	outcomeStoreError                            // the shared store failed; its failure policy decided
	outcomeWouldRateLimited                      // shadow mode: would have been rate_limited
	outcomeWouldClientConcurrency                // shadow mode: would have been client_concurrency
	outcomeWouldGroupConcurrency                 // shadow mode: would have been group_concurrency
	outcomeMissingKey                            // 400 or 401: no value to key the request by
	outcomeFallback                              // the shared store failed; the door's own buckets admitted it
	outcomeWouldMissingKey                       // shadow mode: would have been missing_key
	outcomeBodyCut                               // admitted; its body broke its rate or deadline, or was cut short
	outcomeExempt                                // admitted without spending: the group exempts its client or key
	outcomeDelayed                               // admitted once its reserved token had refilled (Budget.Queue)
	outcomeWouldDelayed                          // shadow mode: admitted at once, would have waited for its token
	outcomeDelayAbandoned                        // its context ended while it waited for its token, which it gave back
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	"ok", "client_error", "server_error", "rate_limited", "client_concurrency",
	"group_concurrency", "cached", "store_error",
	"would_rate_limited", "would_client_concurrency", "would_group_concurrency",
	"missing_key", "fallback", "would_missing_key", "body_cut", "exempted",
	"delayed", "would_delayed", "delay_abandoned",
}

// String returns the outcome as the metrics spell it, such as "rate_limited".
func (o outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// would returns the shadow-mode form of a rejection outcome.
func (o outcome) would() outcome {
	switch o {
	case outcomeRateLimited:
		return outcomeWouldRateLimited
	case outcomeClientConcurrency:
		return outcomeWouldClientConcurrency
	case outcomeGroupConcurrency:
		return outcomeWouldGroupConcurrency
	case outcomeMissingKey:
		return outcomeWouldMissingKey
	case outcomeDelayed:
		return outcomeWouldDelayed
	}
	return o
}

// Attribute keys of the door's instruments; no instrument carries any other
// attribute, and never a client key.
const (
	attrGroup   = attribute.Key("admit.door.group")
	attrOutcome = attribute.Key("admit.door.outcome")
)

// meters holds the door's instruments, created once in New. Every
// instrument is observable: requests add to plain atomic counters, and the
// SDK reads them at collection time. A synchronous Add through the SDK cost
// about a third of an admitted request; an atomic add costs a few
// nanoseconds, and the exported series are the same.
type meters struct {
	requests     metric.Int64ObservableCounter
	evictions    metric.Int64ObservableCounter
	inflight     metric.Int64ObservableUpDownCounter
	waiting      metric.Int64ObservableUpDownCounter
	clients      metric.Int64ObservableGauge
	registration metric.Registration
}

// newMeters creates the door's instruments on meter and reports groups'
// figures through them.
func newMeters(meter metric.Meter, groups map[Group]*group) (*meters, error) {
	m := &meters{}
	var err error
	if m.requests, err = meter.Int64ObservableCounter("admit.door.requests",
		metric.WithDescription("Requests at the door by group and outcome."),
		metric.WithUnit("{request}")); err != nil {
		return nil, err
	}
	if m.evictions, err = meter.Int64ObservableCounter("admit.door.evictions",
		metric.WithDescription("Client table entries replaced by a newcomer."),
		metric.WithUnit("{entry}")); err != nil {
		return nil, err
	}
	if m.inflight, err = meter.Int64ObservableUpDownCounter("admit.door.inflight",
		metric.WithDescription("Requests admitted and not yet settled, by group."),
		metric.WithUnit("{request}")); err != nil {
		return nil, err
	}
	if m.waiting, err = meter.Int64ObservableUpDownCounter("admit.door.waiting",
		metric.WithDescription("Requests waiting for a token they reserved, by group."),
		metric.WithUnit("{request}")); err != nil {
		return nil, err
	}
	if m.clients, err = meter.Int64ObservableGauge("admit.door.clients",
		metric.WithDescription("Entries in the group's client table."),
		metric.WithUnit("{client}")); err != nil {
		return nil, err
	}
	if err := m.register(meter, groups); err != nil {
		return nil, err
	}
	return m, nil
}

// counts is a tally of outcomes and evictions, kept per shard so parallel
// requests do not contend on one cache line, and summed by the metrics
// callback.
type counts struct {
	outcomes  [numOutcomes]atomic.Int64
	evictions atomic.Int64
}

// groupMeters holds one group's attribute options, built ahead of time.
type groupMeters struct {
	outcome [numOutcomes][]metric.ObserveOption
	group   []metric.ObserveOption
}

func newGroupMeters(g Group) *groupMeters {
	gm := &groupMeters{}
	groupAttr := attrGroup.String(string(g))
	for o := range numOutcomes {
		set := attribute.NewSet(groupAttr, attrOutcome.String(o.String()))
		gm.outcome[o] = []metric.ObserveOption{metric.WithAttributeSet(set)}
	}
	gm.group = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(groupAttr))}
	return gm
}

// register reports every group's counts and gauges at collection time.
func (m *meters) register(meter metric.Meter, groups map[Group]*group) error {
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, g := range groups {
			gm := g.meters
			inflight, clients, outcomes, evictions := g.stats()
			for oc, n := range outcomes {
				o.ObserveInt64(m.requests, n, gm.outcome[oc]...)
			}
			o.ObserveInt64(m.evictions, evictions, gm.group...)
			o.ObserveInt64(m.inflight, int64(inflight), gm.group...)
			o.ObserveInt64(m.waiting, g.waiting.Load(), gm.group...)
			o.ObserveInt64(m.clients, int64(clients), gm.group...)
		}
		return nil
	}, m.requests, m.evictions, m.inflight, m.waiting, m.clients)
	m.registration = reg
	return err
}
