package memquota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/lru"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// DefaultMaxBuckets is how many buckets a [Memory] store tracks when
// [Config].MaxBuckets is 0. A bucket takes about 250 bytes.
const DefaultMaxBuckets = 100_000

// Config configures a [Memory] store. The zero value is ready to use.
type Config struct {
	// MaxBuckets bounds how many buckets (rule and subject pairs) the store
	// tracks, so memory stays bounded however many subjects call; 0 means
	// DefaultMaxBuckets. When a new bucket would exceed it, one of the least
	// recently used makes room: an expired one, else the least used below
	// its limit, whose subject starts afresh, counted in
	// admit.quota.evictions; when every one examined reached its limit, the
	// new subject decides on its rule's overflow bucket (see [Memory]).
	MaxBuckets int
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// MeterProvider receives the store's metrics (admit.quota.decisions and
	// admit.quota.latency with store "memory") and the admit.quota.evictions
	// and admit.quota.overflows counters; nil means the global meter
	// provider.
	MeterProvider metric.MeterProvider
}

// Memory is an in-process store: a [quota.Charger] for tests and for
// programs that run as a single process. It decides exactly as the shared
// stores do, with the same arithmetic, but counts only the calls made through
// it, so N replicas each using their own Memory enforce N times the limit.
//
// It tracks limits precisely for the MaxBuckets most recently used buckets
// and never forgets a live bucket that reached its limit: a new subject
// takes the place of an expired bucket first (its window ended, or its GCRA
// bucket refilled), else of the least used bucket below its limit, so a
// flood of new subjects restarts only buckets that had not reached their
// limits, and when every bucket examined has, the new subject decides on
// its rule's one overflow bucket, shared by all such subjects, as the
// door's clients without a table entry share its shared bucket. It never
// fails, so it has no failure policy.
//
// Use [New] to create one; the zero Memory is not usable. It is safe for
// concurrent use.
type Memory struct {
	now       func() time.Time
	metrics   *store.Metrics
	evictions metric.Int64Counter
	overflows metric.Int64Counter

	mu       sync.Mutex // guards the following fields
	buckets  lru.Table[bucketKey, bucket]
	overflow map[bucketKey]*bucket // by rule, with no subject
}

// New returns an in-memory store configured by cfg.
func New(cfg Config) (*Memory, error) {
	if cfg.MaxBuckets < 0 {
		return nil, fmt.Errorf("memquota: MaxBuckets %d, want 0 (the default, %d) or more", cfg.MaxBuckets, DefaultMaxBuckets)
	}
	max := cfg.MaxBuckets
	if max == 0 {
		max = DefaultMaxBuckets
	}
	m := &Memory{now: cfg.Now, buckets: lru.New[bucketKey, bucket](max), overflow: make(map[bucketKey]*bucket)}
	if m.now == nil {
		m.now = time.Now
	}
	var err error
	if m.metrics, err = store.NewMetrics(cfg.MeterProvider, "memory"); err != nil {
		return nil, fmt.Errorf("memquota: metrics: %w", err)
	}
	if m.evictions, m.overflows, err = boundMetrics(cfg.MeterProvider, "admit.quota.evictions",
		"Live buckets below their limit a bounded store forgot to make room; a steady rate means MaxBuckets is too small.", "{bucket}"); err != nil {
		return nil, fmt.Errorf("memquota: metrics: %w", err)
	}
	return m, nil
}

// Allow counts one call of subject against rule.
func (m *Memory) Allow(ctx context.Context, rule quota.Rule, subject string) (quota.Decision, error) {
	return m.AllowN(ctx, rule, subject, 1)
}

// AllowN counts n calls of subject against rule at once; n = 0 reports whether
// one more call would be allowed and changes nothing. The only errors are
// caller errors ([quota.ErrRule], [quota.ErrSubject]), returned with a
// refused decision.
func (m *Memory) AllowN(ctx context.Context, rule quota.Rule, subject string, n int) (quota.Decision, error) {
	if err := store.Check(rule, subject, n); err != nil {
		return store.Refuse(rule, err)
	}
	start := time.Now()
	now := m.now()
	m.mu.Lock()
	d, s := m.allowNLocked(rule, subject, n, now)
	m.mu.Unlock()
	var sum spots
	count(&sum, s)
	m.record(ctx, sum)
	m.metrics.Record(ctx, d, nil, time.Since(start))
	return d, nil
}

// Refund gives back n calls of subject counted against rule (see
// [quota.Charger]): to the rule's overflow bucket when the subject has no
// bucket, since its call counted there. The only errors are caller errors.
func (m *Memory) Refund(_ context.Context, rule quota.Rule, subject string, n int) error {
	if err := store.Check(rule, subject, n); err != nil {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucketLocked(bucketKey{name: rule.Name, subject: subject, alg: rule.Algorithm})
	switch {
	case b == nil || n == 0:
	case rule.Algorithm == quota.TokenBucket:
		b.tat = b.tat.Add(-store.Interval(rule) * time.Duration(n))
		b.expires = b.tat
	case b.start.Equal(store.WindowStart(now, rule.Window)):
		b.count = max(0, b.count-int64(n))
	}
	return nil
}

// Len returns how many buckets the store tracks, expired ones included,
// not counting the overflow buckets: never more than MaxBuckets.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buckets.Len()
}

// bucketLocked returns key's bucket, or its rule's overflow bucket when it
// has none, or nil.
func (m *Memory) bucketLocked(key bucketKey) *bucket {
	if i, ok := m.buckets.Peek(key); ok {
		return m.buckets.At(i)
	}
	return m.overflow[bucketKey{name: key.name, alg: key.alg}]
}

// record counts what finding places for calls cost.
func (m *Memory) record(ctx context.Context, s spots) {
	if s.evicted > 0 {
		m.evictions.Add(ctx, int64(s.evicted), storeOpts...)
	}
	if s.overflowed > 0 {
		m.overflows.Add(ctx, int64(s.overflowed), storeOpts...)
	}
}

// allowNLocked decides and updates the bucket, and returns where it
// found it.
func (m *Memory) allowNLocked(rule quota.Rule, subject string, n int, now time.Time) (quota.Decision, spot[bucket]) {
	key := bucketKey{name: rule.Name, subject: subject, alg: rule.Algorithm}
	s := m.findLocked(key, now)
	b := s.v
	if rule.Algorithm == quota.TokenBucket {
		var tat time.Time
		if b != nil {
			tat = b.tat
		}
		d, tat := store.GCRADecision(rule, now, tat, n)
		if n == 0 || !d.Allowed {
			return d, spot[bucket]{} // nothing spent
		}
		b = m.takeLocked(s, key, rule)
		b.tat, b.expires = tat, tat
		return d, s
	}

	ws := store.WindowStart(now, rule.Window)
	var count int64
	if b != nil && !b.start.Before(ws) {
		// The same window, or a clock that stepped back into an earlier one:
		// a bucket keeps only its latest window, so keep counting there
		// rather than start afresh, which would admit more than the stores
		// that keep every window.
		ws, count = b.start, b.count
	}
	count += int64(n)
	d := store.FixedWindowDecision(rule, now, count, n)
	if n == 0 {
		return d, spot[bucket]{}
	}
	b = m.takeLocked(s, key, rule)
	b.start, b.count, b.expires = ws, count, ws.Add(rule.Window)
	return d, s
}

// findLocked returns key's spot: its bucket, room for one, or its rule's
// overflow bucket.
func (m *Memory) findLocked(key bucketKey, now time.Time) spot[bucket] {
	return find(&m.buckets, key, func(b *bucket) uint64 { return b.cost(now) }, func() *bucket {
		return m.overflowLocked(bucketKey{name: key.name, alg: key.alg}, now)
	})
}

// takeLocked returns the bucket s names, giving key a new one in the table
// when s has none, and sets what the bucket's rule holds.
func (m *Memory) takeLocked(s spot[bucket], key bucketKey, rule quota.Rule) *bucket {
	b := s.v
	if b == nil {
		b = take(&m.buckets, s, key, bucket{})
	}
	b.limit = uint64(rule.BurstOrLimit())
	if rule.Algorithm == quota.TokenBucket {
		b.interval = store.Interval(rule)
	}
	return b
}

// overflowLocked returns the overflow bucket of key's rule, dropping the
// expired overflow buckets when it adds one, so that they number no more
// than the rules in use.
func (m *Memory) overflowLocked(key bucketKey, now time.Time) *bucket {
	if b := m.overflow[key]; b != nil {
		return b
	}
	for k, b := range m.overflow {
		if !now.Before(b.expires) {
			delete(m.overflow, k)
		}
	}
	b := new(bucket)
	m.overflow[key] = b
	return b
}
