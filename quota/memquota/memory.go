package memquota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/meter"
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
	// DefaultMaxBuckets. When a new bucket would exceed it, an expired bucket
	// is dropped if the least recently used one has expired; otherwise the
	// least recently used bucket is evicted and its subject starts afresh,
	// counted in admit.quota.evictions.
	MaxBuckets int
	// Now returns the current time; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// MeterProvider receives the store's metrics (admit.quota.decisions and
	// admit.quota.latency with store "memory") and the admit.quota.evictions
	// counter; nil means the global meter provider.
	MeterProvider metric.MeterProvider
}

// Memory is an in-process store: a [quota.Charger] for tests and for
// programs that run as a single process. It decides exactly as the shared
// stores do, with the same arithmetic, but counts only the calls made through
// it, so N replicas each using their own Memory enforce N times the limit.
//
// It tracks limits precisely for the MaxBuckets most recently used buckets:
// a bucket is dropped once it has expired (its window ended, or its GCRA
// bucket refilled) when room is needed, and only when none has expired is a
// live bucket evicted, which forgets its count. It never fails, so it has no
// failure policy.
//
// Use [New] to create one; the zero Memory is not usable. It is safe for
// concurrent use.
type Memory struct {
	now       func() time.Time
	max       int
	metrics   *store.Metrics
	evictions metric.Int64Counter
	evictOpts []metric.AddOption

	mu      sync.Mutex // guards buckets
	buckets *lru
}

// New returns an in-memory store configured by cfg.
func New(cfg Config) (*Memory, error) {
	if cfg.MaxBuckets < 0 {
		return nil, fmt.Errorf("memquota: MaxBuckets %d, want 0 (the default, %d) or more", cfg.MaxBuckets, DefaultMaxBuckets)
	}
	m := &Memory{now: cfg.Now, max: cfg.MaxBuckets, buckets: newLRU()}
	if m.now == nil {
		m.now = time.Now
	}
	if m.max == 0 {
		m.max = DefaultMaxBuckets
	}
	var err error
	if m.metrics, err = store.NewMetrics(cfg.MeterProvider, "memory"); err != nil {
		return nil, fmt.Errorf("memquota: metrics: %w", err)
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m.evictions, err = mp.Meter(meter.Name).Int64Counter("admit.quota.evictions",
		metric.WithDescription("Live buckets a bounded store forgot to make room; a steady rate means MaxBuckets is too small."),
		metric.WithUnit("{bucket}"))
	if err != nil {
		return nil, fmt.Errorf("memquota: metrics: %w", err)
	}
	m.evictOpts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.quota.store", "memory")))}
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
	d, evicted := m.allowNLocked(rule, subject, n, now)
	m.mu.Unlock()
	if evicted {
		m.evictions.Add(ctx, 1, m.evictOpts...)
	}
	m.metrics.Record(ctx, d, nil, time.Since(start))
	return d, nil
}

// Refund gives back n calls of subject counted against rule (see
// [quota.Charger]). The only errors are caller errors.
func (m *Memory) Refund(_ context.Context, rule quota.Rule, subject string, n int) error {
	if err := store.Check(rule, subject, n); err != nil {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buckets.get(bucketKey{name: rule.Name, subject: subject, alg: rule.Algorithm})
	switch {
	case b == nil || n == 0:
	case rule.Algorithm == quota.GCRA:
		b.tat = b.tat.Add(-store.Interval(rule) * time.Duration(n))
		b.expires = b.tat
	case b.start.Equal(store.WindowStart(now, rule.Window)):
		b.count = max(0, b.count-int64(n))
	}
	return nil
}

// Len returns how many buckets the store tracks, expired ones included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buckets.len()
}

// allowNLocked decides and updates the bucket. evicted reports whether a live
// bucket was forgotten to make room.
func (m *Memory) allowNLocked(rule quota.Rule, subject string, n int, now time.Time) (d quota.Decision, evicted bool) {
	key := bucketKey{name: rule.Name, subject: subject, alg: rule.Algorithm}
	b := m.buckets.get(key)
	if rule.Algorithm == quota.GCRA {
		var tat time.Time
		if b != nil {
			tat = b.tat
		}
		d, tat = store.GCRADecision(rule, now, tat, n)
		if n == 0 || !d.Allowed {
			return d, false // nothing spent
		}
		if b == nil {
			b, evicted = m.addLocked(key, now)
		}
		b.tat, b.expires = tat, tat
		return d, evicted
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
	d = store.FixedWindowDecision(rule, now, count, n)
	if n == 0 {
		return d, false
	}
	if b == nil {
		b, evicted = m.addLocked(key, now)
	}
	b.start, b.count, b.expires = ws, count, ws.Add(rule.Window)
	return d, evicted
}

// addLocked adds a bucket for key, making room first when the store is full.
// Expired buckets at the cold end go first, a few at a time, so the store
// shrinks back as subjects go quiet.
func (m *Memory) addLocked(key bucketKey, now time.Time) (b *bucket, evicted bool) {
	for range 3 {
		old := m.buckets.oldest()
		if old == nil || now.Before(old.expires) {
			break
		}
		m.buckets.remove(old)
		b = old
	}
	if m.buckets.len() >= m.max {
		b = m.buckets.oldest()
		m.buckets.remove(b)
		evicted = true
	}
	if b == nil {
		b = new(bucket)
	}
	*b = bucket{key: key}
	m.buckets.add(b)
	return b, evicted
}
