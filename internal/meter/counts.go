package meter

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Counts are the counts of one observable counter, one per attribute set,
// which every holder adds to with one atomic add and one callback reports
// when the metrics are collected. A count's series appears with its first
// add, as a synchronous counter's would.
type Counts struct {
	n []atomic.Int64
}

// Add adds d to the count of the i-th attribute set.
func (c *Counts) Add(i int, d int64) { c.n[i].Add(d) }

// countsKey names one counter's counts: the provider, the instrument and
// the kind of holder ("redis", "memory").
type countsKey struct {
	mp         metric.MeterProvider
	name, kind string
}

var (
	countsMu sync.Mutex
	counts   = map[countsKey]*Counts{}
)

// SharedCounts returns the counts of the observable counter name on mp
// (nil: the global provider), with one count per attribute set of sets,
// for holders of kind. Holders of one kind on one provider share the
// counts, and so their series, as they would share a synchronous
// counter's; the counter and its callback are made once, at the first
// call, and kept while the process runs, so that a holder's counts stay
// in the series after it is gone and a series never goes down. Memory so
// grows with the providers and kinds, never with the holders: each store
// or service registering a callback of its own kept every one of them.
// Later calls must give the same sets.
func SharedCounts(mp metric.MeterProvider, name, kind string, sets []attribute.Set, opts ...metric.Int64ObservableCounterOption) (*Counts, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	// A provider whose type cannot be a map key (a struct holding a
	// slice) cannot be shared by: its holders each get counts of their
	// own, as before the sharing.
	shared := reflect.TypeOf(mp).Comparable()
	countsMu.Lock()
	defer countsMu.Unlock()
	k := countsKey{name: name, kind: kind}
	if shared {
		k.mp = mp
		if c := counts[k]; c != nil {
			return c, nil
		}
	}
	m := mp.Meter(Name)
	inst, err := m.Int64ObservableCounter(name, opts...)
	if err != nil {
		return nil, err
	}
	c := &Counts{n: make([]atomic.Int64, len(sets))}
	observe := make([]metric.ObserveOption, len(sets))
	for i, s := range sets {
		observe[i] = metric.WithAttributeSet(s)
	}
	// The SDK keeps only the first instrument's callbacks given at its
	// creation; a registered callback adds to what others observe on the
	// same instrument and set, so kinds share the instrument.
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range c.n {
			if v := c.n[i].Load(); v > 0 {
				o.ObserveInt64(inst, v, observe[i])
			}
		}
		return nil
	}, inst); err != nil {
		return nil, err
	}
	if shared {
		counts[k] = c
	}
	return c, nil
}
