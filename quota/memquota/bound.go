package memquota

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/lru"
	"github.com/admitgo/admit/internal/meter"
)

// cost is what forgetting an entry that holds used calls of its limit
// would cost, as [lru.Table.Victim] ranks it; live is false once its window
// has ended or its bucket refilled. This is the door's rule for its client
// tables, with one step added: the door forgets only full and idle entries,
// but a fixed window is not idle until it ends, so that rule alone would
// send every newcomer of a flood to the overflow; instead an entry below
// its limit may be forgotten, the least used first, and one that reached
// its limit (or whose limit is unknown, 0) never is.
func cost(live bool, used, limit uint64) uint64 {
	switch {
	case !live || used == 0:
		return 0
	case limit == 0 || used >= limit:
		return lru.Keep
	}
	return used
}

// spot is where a call counts: in an entry the table holds, in a slot the
// table gives the key when the call spends, or in an overflow entry.
type spot[V any] struct {
	v        *V    // the entry to decide on; nil for a key the table will take
	slot     int32 // with v nil: the slot to take, or -1 to insert
	evicts   bool  // taking slot forgets a live entry
	overflow bool  // v is an overflow entry
}

// spots counts the spots of a call's hits that forgot a live entry and
// that counted in the overflow.
type spots struct{ evicted, overflowed int }

// count adds p's costs to s.
func count[V any](s *spots, p spot[V]) {
	if p.evicts {
		s.evicted++
	}
	if p.overflow {
		s.overflowed++
	}
}

// find returns key's spot in t: its entry; else room, or the cheapest slot
// by rank among the oldest; else the overflow entry that over returns.
func find[K comparable, V any](t *lru.Table[K, V], key K, rank func(*V) uint64, over func() *V) spot[V] {
	if i, ok := t.Lookup(key); ok {
		return spot[V]{v: t.At(i)}
	}
	if !t.Full() {
		return spot[V]{slot: -1}
	}
	if i := t.Victim(lru.Probes, rank); i >= 0 {
		return spot[V]{slot: i, evicts: rank(t.At(i)) > 0}
	}
	return spot[V]{v: over(), overflow: true}
}

// take gives key its entry, v, at s's slot or a new one, and returns it.
func take[K comparable, V any](t *lru.Table[K, V], s spot[V], key K, v V) *V {
	if s.slot < 0 {
		return t.At(t.Insert(key, v))
	}
	t.Replace(s.slot, key, v)
	return t.At(s.slot)
}

// storeOpts is the attribute set of every bound metric.
var storeOpts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.quota.store", "memory")))}

// boundMetrics creates the counter of live entries forgotten, by the
// name of the type that forgets them, and admit.quota.overflows, which
// both types share; nil mp means the global meter provider.
func boundMetrics(mp metric.MeterProvider, evictName, evictDesc, unit string) (evictions, overflows metric.Int64Counter, err error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(meter.Name)
	if evictions, err = m.Int64Counter(evictName, metric.WithDescription(evictDesc), metric.WithUnit(unit)); err != nil {
		return nil, nil, err
	}
	overflows, err = m.Int64Counter("admit.quota.overflows",
		metric.WithDescription("Calls a bounded memory store counted in its shared overflow because every entry it examined had reached its limit; a steady rate means the bound is too small."),
		metric.WithUnit("{call}"))
	return evictions, overflows, err
}
