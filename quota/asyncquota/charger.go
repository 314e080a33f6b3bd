package asyncquota

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// DefaultInterval is how often a [Charger] reconciles when
// [Config].Interval is 0.
const DefaultInterval = 100 * time.Millisecond

// DefaultMaxKeys is how many buckets a [Charger] tracks when
// [Config].MaxKeys is 0. A bucket takes about 200 bytes.
const DefaultMaxKeys = 100_000

// ErrConfig reports a configuration a Charger cannot work with.
var ErrConfig = errors.New("asyncquota: invalid config")

// Config configures a [Charger]. The zero Config is valid: reconcile every
// [DefaultInterval], track up to [DefaultMaxKeys] buckets, time.Now, the
// global meter provider.
type Config struct {
	// Interval is how often [Charger.Run] reconciles with the store; 0
	// means DefaultInterval. A longer interval costs the store less and
	// lets more calls past the limit; see [Bound].
	Interval time.Duration
	// MaxKeys bounds the buckets tracked, so memory stays bounded however
	// many subjects call; 0 means DefaultMaxKeys. A new bucket takes the
	// place of an idle one (nothing admitted since the last reconcile);
	// when none of those it probes is idle, the new bucket's calls are
	// decided by the store, exactly, at its cost.
	MaxKeys int
	// Now is this replica's clock; nil means time.Now. Decisions are made
	// by the store's clock, estimated from this one and the offset the
	// last reconcile measured. Tests inject one.
	Now func() time.Time
	// MeterProvider receives the metrics (admit.quota.async.*); nil means
	// the global meter provider.
	MeterProvider metric.MeterProvider
}

// Charger is a [quota.Charger] that decides from what this replica knows of
// each bucket, at the cost of a map lookup, and reconciles with a shared
// store every interval: it sends the cost it admitted on every bucket it
// touched, in batches of one round trip, and takes the buckets' shared
// state back. Replicas therefore learn of each other's admissions up to
// two intervals late, and may together admit more than the limit, by at
// most [Bound]. See the package documentation.
//
// It is safe for concurrent use. Run must be running for it to reconcile.
type Charger struct {
	store    quota.Reconciler
	interval time.Duration
	now      func() time.Time
	perShard int
	seed     maphash.Seed
	metrics  *metrics

	// offset is the store's clock minus this replica's, in nanoseconds, as
	// the last reconcile measured it.
	offset atomic.Int64
	// failing is set when a reconcile failed, until the store decides a
	// call again: meanwhile every call goes to the store, whose failure
	// policy decides it.
	failing atomic.Bool

	shards [shardCount]shard

	reconciling sync.Mutex // one reconcile at a time; guards the buffers below
	entries     []*entry
	tallies     []quota.Tally
}

var _ quota.Charger = (*Charger)(nil)

// New returns a Charger that decides on its own and reconciles with s. It
// does not contact the store. Call [Charger.Run] to reconcile.
func New(s quota.Reconciler, cfg Config) (*Charger, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("%w: nil store", ErrConfig)
	case cfg.Interval < 0:
		return nil, fmt.Errorf("%w: Interval %v, want 0 (the default, %v) or more", ErrConfig, cfg.Interval, DefaultInterval)
	case cfg.MaxKeys < 0:
		return nil, fmt.Errorf("%w: MaxKeys %d, want 0 (the default, %d) or more", ErrConfig, cfg.MaxKeys, DefaultMaxKeys)
	}
	c := &Charger{store: s, interval: cfg.Interval, now: cfg.Now, seed: maphash.MakeSeed()}
	if c.interval == 0 {
		c.interval = DefaultInterval
	}
	if c.now == nil {
		c.now = time.Now
	}
	maxKeys := cfg.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	c.perShard = max(1, maxKeys/shardCount)
	for i := range c.shards {
		c.shards[i].entries = make(map[key]*entry)
	}
	var err error
	if c.metrics, err = newMetrics(cfg.MeterProvider, c); err != nil {
		return nil, fmt.Errorf("asyncquota: metrics: %w", err)
	}
	return c, nil
}

// Allow counts one call of subject against rule; see [Charger.AllowN].
func (c *Charger) Allow(ctx context.Context, rule quota.Rule, subject string) (quota.Decision, error) {
	return c.AllowN(ctx, rule, subject, 1)
}

// AllowN decides a call of cost n; n = 0 reports whether one more call
// would be allowed and changes nothing. A bucket this replica has
// reconciled is decided here, by the arithmetic every store shares, on the
// store's state as of the last reconcile and this replica's admissions
// since. A bucket it has not yet reconciled (seen for the first time, or
// forgotten to make room) is decided by the store, and so is every call
// while the last reconcile failed: the store's failure policy then decides,
// as it would without the async mode, and a call the store admits is laid
// on what this replica knows. Caller errors are refused with an
// error whatever the policy.
func (c *Charger) AllowN(ctx context.Context, rule quota.Rule, subject string, n int) (quota.Decision, error) {
	if err := store.Check(rule, subject, n); err != nil {
		return store.Refuse(rule, err)
	}
	k := key{name: rule.Name, subject: subject, alg: rule.Algorithm}
	s := c.shard(subject)
	if !c.failing.Load() {
		now := time.Unix(0, c.now().UnixNano()+c.offset.Load())
		s.mu.Lock()
		if e := s.entries[k]; e != nil && e.loaded {
			d := e.decide(rule, now, n)
			s.touchLocked(e)
			s.mu.Unlock()
			s.decisions[modeLocal][outcome(d.Allowed, nil)].Add(1)
			return d, nil
		}
		s.mu.Unlock()
	}
	return c.exact(ctx, s, k, rule, n)
}

// exact has the store decide a call, and tracks its bucket so that the
// next reconcile loads it.
func (c *Charger) exact(ctx context.Context, s *shard, k key, rule quota.Rule, n int) (quota.Decision, error) {
	e, loads, d, local := c.track(s, k, rule, n)
	if local {
		s.decisions[modeLocal][outcome(d.Allowed, nil)].Add(1)
		return d, nil
	}
	d, err := c.store.AllowN(ctx, rule, k.subject, n)
	if e != nil {
		s.mu.Lock()
		e.deciding -= int64(n)
		// A load while the store decided counted this call among those
		// deciding already; laying it on again would count it twice.
		if d.Allowed && err == nil && e.loads == loads {
			e.late += int64(n)
			e.admittedByStore(time.Unix(0, c.now().UnixNano()+c.offset.Load()), n)
		}
		s.mu.Unlock()
	}
	s.decisions[modeStore][outcome(d.Allowed, err)].Add(1)
	if err == nil && c.failing.Load() {
		c.failing.Store(false)
	}
	return d, err
}

// Refund gives back n calls of subject counted against rule (see
// [quota.Charger]): from what this replica admitted and has not yet sent,
// if that much is left, or else at the store.
func (c *Charger) Refund(ctx context.Context, rule quota.Rule, subject string, n int) error {
	if err := store.Check(rule, subject, n); err != nil || n == 0 {
		return err
	}
	s := c.shard(subject)
	s.mu.Lock()
	e := s.entries[key{name: rule.Name, subject: subject, alg: rule.Algorithm}]
	done := e != nil && e.refund(n)
	s.mu.Unlock()
	if done {
		return nil
	}
	return c.store.Refund(ctx, rule, subject, n)
}

// CheckRule reports whether the store can enforce rule
// (quota.RuleChecker), with the error a call with that rule would return.
func (c *Charger) CheckRule(rule quota.Rule) error {
	if rc, ok := c.store.(quota.RuleChecker); ok {
		return rc.CheckRule(rule)
	}
	return store.Check(rule, quota.Subject(""), 1)
}

// Len returns how many buckets the Charger tracks.
func (c *Charger) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}

// shard returns the shard that holds subject's buckets.
func (c *Charger) shard(subject string) *shard {
	return &c.shards[c.shardIndex(subject)]
}

func (c *Charger) shardIndex(subject string) int {
	return int(maphash.String(c.seed, subject) % shardCount)
}

// track tracks a bucket whose call of cost n the store is about to decide,
// so that the next reconcile loads its state, if its shard has room or an
// idle entry to forget; it returns the entry, or nil. A reconcile may have
// loaded the bucket since the caller looked: then the call is decided here,
// under the same lock as the load, and local reports it, since the store,
// which has not yet seen this replica's admissions, would admit past them.
// loads is the entry's count of loads when the call began.
func (c *Charger) track(s *shard, k key, rule quota.Rule, n int) (e *entry, loads int, d quota.Decision, local bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e = s.entries[k]
	if e != nil && e.loaded && !c.failing.Load() {
		d = e.decide(rule, time.Unix(0, c.now().UnixNano()+c.offset.Load()), n)
		s.touchLocked(e)
		return e, e.loads, d, true
	}
	if e == nil {
		if len(s.entries) >= c.perShard && !s.evictLocked() {
			return nil, 0, d, false
		}
		e = &entry{key: k, shard: c.shardIndex(k.subject)}
		s.entries[k] = e
	}
	e.rule = rule
	e.deciding += int64(n)
	s.touchLocked(e)
	return e, e.loads, d, false
}
