package asyncquota

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/meter"
)

// The values of admit.quota.mode: a decision made here from what the
// replica knows, or by the store, exactly.
const (
	modeLocal = iota
	modeStore
	modes
)

var modeNames = [modes]string{"local", "store"}

// outcomes are the values of admit.quota.outcome, as the stores name them.
var outcomes = [...]string{"allowed", "refused", "failed_open", "failed_closed"}

// outcome returns the index in outcomes of a decision and its error.
func outcome(allowed bool, err error) int {
	switch {
	case err == nil && allowed:
		return 0
	case err == nil:
		return 1
	case allowed:
		return 2
	}
	return 3
}

// metrics are a Charger's instruments. Decisions are counted in the
// shards' atomic counters and read at collection time, so that a decision
// at memory cost does not pay for a synchronous instrument; reconciles are
// recorded as they end, once per interval.
type metrics struct {
	reconciles  metric.Int64Counter
	size        metric.Int64Histogram
	over        metric.Int64Histogram
	outcomeOpts [2][]metric.AddOption // ok, failed
	reg         metric.Registration
}

func newMetrics(mp metric.MeterProvider, c *Charger) (*metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(meter.Name)
	decisions, err := m.Int64ObservableCounter("admit.quota.async.decisions",
		metric.WithDescription("Decisions of groups in the async mode, by mode (local: from this replica's buckets; store: by the store, exactly) and outcome."),
		metric.WithUnit("{decision}"))
	if err != nil {
		return nil, err
	}
	keys, err := m.Int64ObservableGauge("admit.quota.async.keys",
		metric.WithDescription("Buckets this replica tracks in the async mode."),
		metric.WithUnit("{bucket}"))
	if err != nil {
		return nil, err
	}
	ms := &metrics{}
	if ms.reconciles, err = m.Int64Counter("admit.quota.async.reconciles",
		metric.WithDescription("Reconciles with the store, by outcome (ok, failed)."),
		metric.WithUnit("{reconcile}")); err != nil {
		return nil, err
	}
	if ms.size, err = m.Int64Histogram("admit.quota.async.reconcile.buckets",
		metric.WithDescription("Buckets sent in one reconcile."),
		metric.WithUnit("{bucket}"),
		metric.WithExplicitBucketBoundaries(0, 1, 10, 100, 1000, 10000, 100000)); err != nil {
		return nil, err
	}
	if ms.over, err = m.Int64Histogram("admit.quota.async.overadmission",
		metric.WithDescription("Per reconcile, the most calls one bucket had admitted beyond its limit across the replicas, as the store's count showed it."),
		metric.WithUnit("{call}"),
		metric.WithExplicitBucketBoundaries(0, 1, 2, 5, 10, 20, 50, 100, 1000)); err != nil {
		return nil, err
	}
	for i, o := range []string{"ok", "failed"} {
		ms.outcomeOpts[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.quota.outcome", o)))}
	}
	var sets [modes][len(outcomes)]metric.ObserveOption
	for md := range modes {
		for o := range outcomes {
			sets[md][o] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("admit.quota.mode", modeNames[md]), attribute.String("admit.quota.outcome", outcomes[o])))
		}
	}
	ms.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		var sum [modes][len(outcomes)]int64
		for i := range c.shards {
			for md := range modes {
				for oc := range outcomes {
					sum[md][oc] += c.shards[i].decisions[md][oc].Load()
				}
			}
		}
		for md := range modes {
			for oc := range outcomes {
				if sum[md][oc] > 0 {
					o.ObserveInt64(decisions, sum[md][oc], sets[md][oc])
				}
			}
		}
		o.ObserveInt64(keys, int64(c.Len()))
		return nil
	}, decisions, keys)
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// reconciled records one reconcile of buckets buckets that showed at most
// over calls admitted beyond a limit, or failed.
func (m *metrics) reconciled(ctx context.Context, buckets int, over int64, failed bool) {
	i := 0
	if failed {
		i = 1
	}
	m.reconciles.Add(ctx, 1, m.outcomeOpts[i]...)
	m.size.Record(ctx, int64(buckets))
	if !failed {
		m.over.Record(ctx, over)
	}
}
