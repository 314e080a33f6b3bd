package memquota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/lru"
	"github.com/admitgo/admit/quota"
)

// DefaultMaxCounters is how many counters a [Counter] keeps when
// [CounterConfig].MaxCounters is 0. A counter takes about 150 bytes.
const DefaultMaxCounters = 100_000

// ErrCountOverflow is the error of a [Counter.Count] that would take a
// count past 2^63-1, where the shared stores' integers end.
var ErrCountOverflow = errors.New("memquota: count would pass 2^63-1")

// Hit is one addition to a counter, as [Counter.Count] takes it.
//
// Deprecated: use [quota.Hit], which Hit is; every store's Counter takes it.
type Hit = quota.Hit

// CounterConfig configures a [Counter]. The zero value is ready to use.
type CounterConfig struct {
	// MaxCounters bounds how many counters the Counter keeps; 0 means
	// DefaultMaxCounters. When a new counter would pass it, one of the
	// least recently used makes room: one whose window has ended, else the
	// least counted below its hit's Limit, forgetting its count, which
	// admit.quota.count_evictions counts; when every one examined reached
	// its limit, the new key counts in the overflow (see [Counter]).
	MaxCounters int
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// MeterProvider receives admit.quota.count_evictions and
	// admit.quota.overflows; nil means the global meter provider.
	MeterProvider metric.MeterProvider
}

// Counter counts hits in fixed windows aligned to the Unix epoch, as
// envoyproxy/ratelimit counts in Redis: every hit is added, over the limit
// or not, and the caller decides from the count after. It is a
// [quota.Counter].
//
// It tracks counts precisely for the MaxCounters most recently used
// counters and never forgets one that reached its hit's Limit in a live
// window: a new key takes the place of an ended window first, else of the
// least counted key below its limit, so a flood of new keys restarts only
// counts that had not reached their limits, and when every key examined
// has, the new key counts in one overflow counter per window length that
// all such keys share, as the door's clients without a table entry share
// its shared bucket.
//
// Use [NewCounter]; the zero Counter is not usable. It is safe for
// concurrent use.
type Counter struct {
	now       func() time.Time
	evictions metric.Int64Counter
	overflows metric.Int64Counter

	mu       sync.Mutex // guards the following fields
	table    lru.Table[countKey, countEntry]
	overflow map[int64]*countEntry // by window, in seconds
}

// countKey names one counter.
type countKey struct {
	key    string
	window int64 // seconds
}

// countEntry is one counter: the window it counts, its count, and the
// limit its last hit gave.
type countEntry struct {
	start, end int64 // Unix seconds
	count      uint64
	limit      uint64
}

// countCost ranks e for eviction at sec (see cost).
func countCost(e *countEntry, sec int64) uint64 {
	return cost(e.end > sec, e.count, e.limit)
}

// NewCounter returns an in-memory counter configured by cfg.
func NewCounter(cfg CounterConfig) (*Counter, error) {
	if cfg.MaxCounters < 0 {
		return nil, fmt.Errorf("memquota: MaxCounters %d, want 0 (the default, %d) or more", cfg.MaxCounters, DefaultMaxCounters)
	}
	max := cfg.MaxCounters
	if max == 0 {
		max = DefaultMaxCounters
	}
	c := &Counter{now: cfg.Now, table: lru.New[countKey, countEntry](max), overflow: make(map[int64]*countEntry)}
	if c.now == nil {
		c.now = time.Now
	}
	var err error
	if c.evictions, c.overflows, err = boundMetrics(cfg.MeterProvider, "admit.quota.count_evictions",
		"Live counters below their limit a bounded counter forgot to make room; a steady rate means MaxCounters is too small.", "{counter}"); err != nil {
		return nil, fmt.Errorf("memquota: metrics: %w", err)
	}
	return c, nil
}

// Count adds each hit's N to its counter's count in the window that holds
// the current time, in order, and sets the hit's Count to the count after,
// so that two hits on one counter see one another as two requests would.
// It returns the time it counted by. It fails, changing nothing, on a
// window that is not whole seconds and on a count that would pass 2^63-1.
func (c *Counter) Count(ctx context.Context, hits []quota.Hit) (time.Time, error) {
	for i := range hits {
		if err := checkCountWindow(hits[i].Window); err != nil {
			return time.Time{}, err
		}
	}
	now := c.now()
	sec := now.Unix()
	var sum spots
	c.mu.Lock()
	for i := range hits {
		if _, err := c.peekLocked(&hits[i], sec); err != nil {
			c.mu.Unlock()
			return time.Time{}, err
		}
	}
	for i := range hits {
		count(&sum, c.addLocked(&hits[i], sec))
	}
	c.mu.Unlock()
	if sum.evicted > 0 {
		c.evictions.Add(ctx, int64(sum.evicted), storeOpts...)
	}
	if sum.overflowed > 0 {
		c.overflows.Add(ctx, int64(sum.overflowed), storeOpts...)
	}
	return now, nil
}

// Len returns how many counters c keeps, ended windows included, not
// counting the overflow's: never more than MaxCounters.
func (c *Counter) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.table.Len()
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
// only together, or in the overflow, saturate there instead (addLocked).
func (c *Counter) peekLocked(h *quota.Hit, sec int64) (uint64, error) {
	k := countKey{h.Key, int64(h.Window / time.Second)}
	var count uint64
	if i, ok := c.table.Peek(k); ok && c.table.At(i).start >= windowStart(sec, k.window) {
		count = c.table.At(i).count
	}
	if h.N > math.MaxInt64-count {
		return 0, ErrCountOverflow
	}
	return count + h.N, nil
}

// addLocked adds h.N to its counter and returns where it found it. A
// counter whose window is later than now's (a clock that stepped back)
// keeps counting there, as Memory's buckets do.
func (c *Counter) addLocked(h *quota.Hit, sec int64) spot[countEntry] {
	k := countKey{h.Key, int64(h.Window / time.Second)}
	start := windowStart(sec, k.window)
	s := find(&c.table, k, func(e *countEntry) uint64 { return countCost(e, sec) }, func() *countEntry {
		return c.overflowLocked(k.window, sec)
	})
	e := s.v
	if e == nil {
		e = take(&c.table, s, k, countEntry{start: math.MinInt64})
	}
	if e.start < start {
		e.start, e.end, e.count = start, start+k.window, 0
	}
	e.count = min(e.count+h.N, math.MaxInt64)
	if !s.overflow {
		e.limit = h.Limit
	}
	h.Count = e.count
	return s
}

// overflowLocked returns the overflow counter of windows of w seconds,
// dropping the overflow counters whose windows have ended when it adds one,
// so that they number no more than the window lengths in use.
func (c *Counter) overflowLocked(w, sec int64) *countEntry {
	if e := c.overflow[w]; e != nil {
		return e
	}
	for k, e := range c.overflow {
		if e.end <= sec {
			delete(c.overflow, k)
		}
	}
	e := &countEntry{start: math.MinInt64}
	c.overflow[w] = e
	return e
}

// windowStart is the start of the window of w seconds that holds sec, as
// envoyproxy/ratelimit aligns it: sec rounded down to a multiple of w.
func windowStart(sec, w int64) int64 {
	return sec - ((sec%w)+w)%w
}
