package memquota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/meter"
)

// DefaultMaxCounters is how many counters a [Counter] keeps when
// [CounterConfig].MaxCounters is 0. A counter takes about 150 bytes.
const DefaultMaxCounters = 100_000

// ErrCountOverflow is the error of a [Counter.Count] that would take a
// count past 2^63-1, where the shared stores' integers end.
var ErrCountOverflow = errors.New("memquota: count would pass 2^63-1")

// Hit is one addition to a counter, as [Counter.Count] takes it. It is an
// alias of an unnamed struct type so that the counters of every store, and
// their callers, share it without importing one another.
type Hit = struct {
	// Key names the counter; any bytes. Callers pass a hash of what they
	// count by, so that no raw identifier reaches a store.
	Key string
	// Window is the counter's window, whole seconds and at least one; with
	// Key it names the counter.
	Window time.Duration
	// N is what to add; 0 reads the count.
	N uint64
	// Count is set by Count: the window's count after N was added.
	Count uint64
}

// CounterConfig configures a [Counter]. The zero value is ready to use.
type CounterConfig struct {
	// MaxCounters bounds how many counters the Counter keeps; 0 means
	// DefaultMaxCounters. When a new counter would pass it, the least
	// recently used one is dropped: at no cost when its window has ended,
	// otherwise forgetting its count, which admit.quota.count_evictions
	// counts.
	MaxCounters int
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// MeterProvider receives admit.quota.count_evictions; nil means the
	// global meter provider.
	MeterProvider metric.MeterProvider
}

// Counter counts hits in fixed windows aligned to the Unix epoch, as
// envoyproxy/ratelimit counts in Redis: every hit is added, over the limit
// or not, and the caller decides from the count after. It decides nothing
// itself. It tracks counts precisely for the MaxCounters most recently used
// counters.
//
// Use [NewCounter]; the zero Counter is not usable. It is safe for
// concurrent use.
type Counter struct {
	now       func() time.Time
	max       int
	evictions metric.Int64Counter
	evictOpts []metric.AddOption

	mu    sync.Mutex // guards the following fields
	items map[countKey]*countEntry
	root  countEntry // root.next is the most recently used, root.prev the least
}

// countKey names one counter.
type countKey struct {
	key    string
	window int64 // seconds
}

// countEntry is one counter: the window it counts and its count.
type countEntry struct {
	k          countKey
	start      int64 // Unix seconds
	count      uint64
	prev, next *countEntry
}

// NewCounter returns an in-memory counter configured by cfg.
func NewCounter(cfg CounterConfig) (*Counter, error) {
	if cfg.MaxCounters < 0 {
		return nil, fmt.Errorf("memquota: MaxCounters %d, want 0 (the default, %d) or more", cfg.MaxCounters, DefaultMaxCounters)
	}
	c := &Counter{now: cfg.Now, max: cfg.MaxCounters, items: make(map[countKey]*countEntry)}
	if c.now == nil {
		c.now = time.Now
	}
	if c.max == 0 {
		c.max = DefaultMaxCounters
	}
	c.root.next, c.root.prev = &c.root, &c.root
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	var err error
	c.evictions, err = mp.Meter(meter.Name).Int64Counter("admit.quota.count_evictions",
		metric.WithDescription("Live counters a bounded counter forgot to make room; a steady rate means MaxCounters is too small."),
		metric.WithUnit("{counter}"))
	if err != nil {
		return nil, fmt.Errorf("memquota: metrics: %w", err)
	}
	c.evictOpts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.quota.store", "memory")))}
	return c, nil
}

// Count adds each hit's N to its counter's count in the window that holds
// the current time, in order, and sets the hit's Count to the count after,
// so that two hits on one counter see one another as two requests would.
// It returns the time it counted by. It fails, changing nothing, on a
// window that is not whole seconds and on a count that would pass 2^63-1.
func (c *Counter) Count(ctx context.Context, hits []Hit) (time.Time, error) {
	for i := range hits {
		if err := checkCountWindow(hits[i].Window); err != nil {
			return time.Time{}, err
		}
	}
	now := c.now()
	sec := now.Unix()
	evicted := 0
	c.mu.Lock()
	for i := range hits {
		if _, err := c.peekLocked(&hits[i], sec); err != nil {
			c.mu.Unlock()
			return time.Time{}, err
		}
	}
	for i := range hits {
		evicted += c.addLocked(&hits[i], sec)
	}
	c.mu.Unlock()
	if evicted > 0 {
		c.evictions.Add(ctx, int64(evicted), c.evictOpts...)
	}
	return now, nil
}

// Len returns how many counters c keeps, ended windows included.
func (c *Counter) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// checkCountWindow refuses windows the shared stores cannot count in.
func checkCountWindow(w time.Duration) error {
	if w < time.Second || w%time.Second != 0 {
		return fmt.Errorf("memquota: window %v, want whole seconds, at least one", w)
	}
	return nil
}

// peekLocked returns the count h alone would leave, or ErrCountOverflow
// when that passes 2^63-1. Two hits on one counter in one call that pass it
// only together saturate there instead (addLocked).
func (c *Counter) peekLocked(h *Hit, sec int64) (uint64, error) {
	k := countKey{h.Key, int64(h.Window / time.Second)}
	var count uint64
	if e := c.items[k]; e != nil && e.start >= windowStart(sec, k.window) {
		count = e.count
	}
	if h.N > math.MaxInt64-count {
		return 0, ErrCountOverflow
	}
	return count + h.N, nil
}

// addLocked adds h.N to its counter and reports how many live counters it
// forgot to make room (0 or 1). A counter whose window is later than now's
// (a clock that stepped back) keeps counting there, as Memory's buckets do.
func (c *Counter) addLocked(h *Hit, sec int64) int {
	k := countKey{h.Key, int64(h.Window / time.Second)}
	start := windowStart(sec, k.window)
	e := c.items[k]
	evicted := 0
	if e == nil {
		e, evicted = c.newLocked(k, sec)
	} else {
		c.unlink(e)
		c.pushFront(e)
	}
	if e.start < start {
		e.start, e.count = start, 0
	}
	e.count = min(e.count+h.N, math.MaxInt64)
	h.Count = e.count
	return evicted
}

// newLocked adds an empty counter for k, dropping the least recently used
// one when c is full.
func (c *Counter) newLocked(k countKey, sec int64) (*countEntry, int) {
	evicted := 0
	var e *countEntry
	if len(c.items) >= c.max {
		e = c.root.prev
		if e.start+e.k.window > sec {
			evicted = 1
		}
		delete(c.items, e.k)
		c.unlink(e)
	}
	if e == nil {
		e = new(countEntry)
	}
	*e = countEntry{k: k, start: math.MinInt64}
	c.items[k] = e
	c.pushFront(e)
	return e, evicted
}

func (c *Counter) unlink(e *countEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (c *Counter) pushFront(e *countEntry) {
	e.prev = &c.root
	e.next = c.root.next
	c.root.next.prev = e
	c.root.next = e
}

// windowStart is the start of the window of w seconds that holds sec, as
// envoyproxy/ratelimit aligns it: sec rounded down to a multiple of w.
func windowStart(sec, w int64) int64 {
	return sec - ((sec%w)+w)%w
}
