package store

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/meter"
	"github.com/admitgo/admit/quota"
)

// outcomes are the values of admit.quota.outcome, in the order Record picks
// them; docs/quota.md documents them, so they are part of the contract.
var outcomes = [...]string{"allowed", "refused", "failed_open", "failed_closed"}

// Metrics records a store's decisions as the admit.quota.decisions counter
// (attributes admit.quota.store and admit.quota.outcome) and the
// admit.quota.latency histogram in seconds (attribute admit.quota.store).
// Caller errors are not decisions and are not counted. A nil *Metrics records
// nothing. It is safe for concurrent use.
//
// The counter is observable: a decision adds to one atomic count, and the
// SDK reads the counts when it collects. A synchronous counter cost each
// decision the SDK's look-up of its attribute set and of the context's span
// for an exemplar, about as much as the histogram's whole record. Stores of
// one kind on one provider share the counts (meter.SharedCounts): two of
// them (admit rls's main and per-second stores) add into one series, as
// with a synchronous counter, and a program that makes stores by the
// thousand keeps one callback.
type Metrics struct {
	counts  *meter.Counts
	latency metric.Float64Histogram
	// Attribute options are built once so recording does not allocate.
	storeOpts []metric.RecordOption
}

// NewMetrics creates the instruments for the store named store ("memory",
// "postgres", "redis") on mp; a nil mp means the global meter provider.
func NewMetrics(mp metric.MeterProvider, store string) (*Metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	storeAttr := attribute.String("admit.quota.store", store)
	sets := make([]attribute.Set, len(outcomes))
	for i, o := range outcomes {
		sets[i] = attribute.NewSet(storeAttr, attribute.String("admit.quota.outcome", o))
	}
	counts, err := meter.SharedCounts(mp, "admit.quota.decisions", store, sets,
		metric.WithDescription("Shared-quota decisions by store and outcome."),
		metric.WithUnit("{decision}"))
	if err != nil {
		return nil, err
	}
	ms := &Metrics{counts: counts}
	ms.latency, err = mp.Meter(meter.Name).Float64Histogram("admit.quota.latency",
		metric.WithDescription("Time a store took to decide, failures included."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1))
	if err != nil {
		return nil, err
	}
	ms.storeOpts = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(storeAttr))}
	return ms, nil
}

// Record counts one decision that took elapsed. err is the error the store
// returned with d.
func (m *Metrics) Record(ctx context.Context, d quota.Decision, err error, elapsed time.Duration) {
	if m == nil || errors.Is(err, quota.ErrRule) || errors.Is(err, quota.ErrSubject) {
		return
	}
	i := 0
	switch {
	case err == nil && d.Allowed:
		i = 0
	case err == nil:
		i = 1
	case d.Allowed:
		i = 2
	default:
		i = 3
	}
	m.counts.Add(i, 1)
	m.latency.Record(ctx, elapsed.Seconds(), m.storeOpts...)
}
