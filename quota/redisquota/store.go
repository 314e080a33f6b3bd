package redisquota

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// DefaultPrefix starts every key when [Config].Prefix is empty.
const DefaultPrefix = "admit:quota:"

// DefaultTimeout bounds a decision when [Config].Timeout is 0: long enough
// for a round trip to a Redis in the same data centre under load, short enough
// that an outage costs each request little.
const DefaultTimeout = 100 * time.Millisecond

// ErrConfig reports a configuration or client the store cannot work with.
var ErrConfig = errors.New("redisquota: invalid config")

// Config configures a [Store]. The zero Config is valid: default prefix, the
// Redis server's clock, fail closed, [DefaultTimeout], the global meter
// provider.
type Config struct {
	// Prefix starts every key the store writes; empty means [DefaultPrefix].
	// Give each deployment sharing a Redis its own prefix. It must not hold
	// "{", which would take the place of the subject's hash tag (see the
	// package documentation); rule names must not either.
	Prefix string
	// Now is the clock decisions are made by; nil means the Redis server's
	// own (TIME, read by each script), so that replicas whose clocks
	// disagree still count in the same windows and share a bucket fairly.
	// Tests inject one; a store given one sends its time with every call,
	// and then every replica's clock must agree to well within a window.
	Now func() time.Time
	// Failure is what a call the store cannot decide (Redis down, slow past
	// Timeout, or failing) gets: a
	// [quota.Failure], under which FailOpen allows and every other value
	// refuses, with the error. The zero value is quota.FailClosed.
	Failure quota.Failure
	// Timeout bounds each decision, the round trip included; 0 means
	// [DefaultTimeout]. A call that runs out of time follows the failure
	// policy. It holds only if the client honours context deadlines (see
	// [New]).
	Timeout time.Duration
	// Batch, above 1, sends concurrent decisions to Redis together, up to
	// Batch calls in one pipeline, and coalesces the calls on one bucket
	// into one script run, each call getting the decision it would have had
	// alone: at high concurrency, and most on hot keys, this multiplies
	// throughput over few connections, and it costs a lone call a goroutine
	// handoff. The client must then be a [Pipeliner], and the store must be
	// closed with [Store.Close]. 0 or 1 sends each decision on its own.
	Batch int
	// OneServer says that the client reaches one Redis server itself: a
	// plain or failover *redis.Client talking to Redis, not to a proxy that
	// routes each command by its key. A batching store then sends a
	// pipeline's buckets, and a reconcile's, as one script run per 64
	// buckets (see the package documentation), which costs Redis a sixth
	// less CPU per decision on distinct keys and almost half less per
	// reconciled bucket. A reconcile takes it whenever the client can
	// pipeline, whatever Batch is; a client that cannot pipeline sends one
	// script at a time anyway. Behind a proxy that routes a script
	// by its first key (twemproxy, Envoy's redis_proxy) it would count
	// every bucket of a batch on that key's server, so it is off unless
	// set; New refuses it with a cluster or ring client.
	OneServer bool
	// MeterProvider receives the store's metrics (admit.quota.decisions and
	// admit.quota.latency with store "redis"); nil means the global meter
	// provider.
	MeterProvider metric.MeterProvider
}

// Store is a [quota.Charger] whose counters live in Redis, so every replica
// that shares the Redis shares the limits. Each decision is one Lua script run
// on one key; see the package documentation for the scripts, keys and expiry.
//
// A Store holds no mutable state of its own and is safe for concurrent use;
// its throughput is bounded by the client's connections (see [New]).
type Store struct {
	client    Client
	prefix    string
	now       func() time.Time // nil: the server's clock
	decider   store.Decider
	batch     *batcher // nil unless Config.Batch > 1
	oneServer bool     // Config.OneServer
	reloadState
}

var _ quota.Charger = (*Store)(nil)

// New returns a store that decides through client. It does not contact
// Redis: a server that is down at startup follows the failure policy like any
// later outage.
//
// The client must not retry commands, since a retried script could count one
// call twice, and must honour context deadlines, or Timeout cannot bound a
// call: for a *redis.Client (a failover client from redis.NewFailoverClient
// too), *redis.ClusterClient or *redis.Ring, New checks that MaxRetries is -1
// (retries off), for a cluster client also that MaxRedirects is -1, and that
// ContextTimeoutEnabled is set, and returns an error wrapping [ErrConfig]
// otherwise. Other clients (an *redis.AutoPipeliner, a wrapper) are trusted to
// be set up the same way. A store on a cluster client reloads the client's
// slot map after failed calls; see the package documentation.
func New(client Client, cfg Config) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	}
	if err := checkClient(client); err != nil {
		return nil, err
	}
	if cfg.Batch < 0 {
		return nil, fmt.Errorf("%w: Batch %d, want 0 (no batching) or more", ErrConfig, cfg.Batch)
	}
	if strings.Contains(cfg.Prefix, "{") {
		return nil, fmt.Errorf("%w: Prefix %q holds \"{\", which would take the place of the subject's hash tag", ErrConfig, cfg.Prefix)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: Timeout %v, want 0 (the default) or more", ErrConfig, cfg.Timeout)
	}
	m, err := store.NewMetrics(cfg.MeterProvider, "redis")
	if err != nil {
		return nil, fmt.Errorf("redisquota: metrics: %w", err)
	}
	s := &Store{
		client:  client,
		prefix:  cfg.Prefix,
		now:     cfg.Now,
		decider: store.Decider{Prefix: "redisquota", Failure: cfg.Failure, Timeout: cfg.Timeout, Metrics: m},
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	s.cluster, _ = client.(*redis.ClusterClient)
	if cfg.OneServer {
		switch client.(type) {
		case *redis.ClusterClient, *redis.Ring:
			return nil, fmt.Errorf("%w: OneServer with a %T, whose keys live on several servers", ErrConfig, client)
		}
		s.oneServer = true
	}
	if s.decider.Timeout == 0 {
		s.decider.Timeout = DefaultTimeout
	}
	if cfg.Batch > 1 {
		p, ok := client.(Pipeliner)
		if !ok {
			return nil, fmt.Errorf("%w: Batch %d needs a client that can pipeline", ErrConfig, cfg.Batch)
		}
		s.batch = newBatcher(s, p, cfg.Batch)
	}
	return s, nil
}

// Close stops a batching store's goroutines; later calls fail with
// [ErrClosed] and follow the failure policy. It does not close the client.
// On a store that does not batch it does nothing. It always returns nil.
func (s *Store) Close() error {
	if s.batch != nil {
		s.batch.close()
	}
	return nil
}

// Allow counts one call of subject against rule; see [Store.AllowN].
func (s *Store) Allow(ctx context.Context, rule quota.Rule, subject string) (quota.Decision, error) {
	return s.AllowN(ctx, rule, subject, 1)
}

// AllowN counts n calls of subject against rule in one script run; n = 0
// reports whether one more call would be allowed and changes nothing. The
// decision is the one the in-memory and PostgreSQL stores give for the same
// time and bucket state. A caller error (an invalid rule or cost, a subject
// that did not come from [quota.Subject], or a rule beyond the limits in the
// package documentation) is refused with an error; a store error follows the
// failure policy and is returned with its decision. The call is never
// retried.
func (s *Store) AllowN(ctx context.Context, rule quota.Rule, subject string, n int) (quota.Decision, error) {
	if err := check(rule, subject, n); err != nil {
		return store.Refuse(rule, err)
	}
	key := s.key(rule, subject)
	if s.batch != nil {
		return s.decider.DecideBy(ctx, rule, func(ctx context.Context, deadline time.Time) (quota.Decision, error) {
			return s.batch.run(ctx, rule, key, n, deadline)
		})
	}
	return s.decider.Decide(ctx, rule, func(ctx context.Context) (quota.Decision, error) {
		c := call{rule: rule, key: key, n: n}
		s.decide(ctx, &c)
		return c.d, c.err
	})
}

// maxExact is the largest integer a Lua number (a double) holds exactly; the
// scripts' arithmetic in nanoseconds stays below it.
const maxExact = 1 << 53

// check is store.Check plus this store's own limits, which also wrap
// quota.ErrRule: no "{" in the rule name (see [Store.key]), a fixed window of at least a millisecond (the resolution of
// Redis expiry), and either whole seconds or below maxExact/2 nanoseconds
// (about 52 days; clock.lua's window), and GCRA spans within maxExact
// nanoseconds (about 104 days), so the scripts' arithmetic is exact.
func check(rule quota.Rule, subject string, n int) error {
	if err := store.Check(rule, subject, n); err != nil {
		return err
	}
	if strings.Contains(rule.Name, "{") {
		return &quota.RuleError{Rule: rule.Name, Reason: "the Redis store's rule names must not hold \"{\", which would take the place of the subject's hash tag"}
	}
	switch rule.Algorithm {
	case quota.FixedWindow:
		if rule.Window < time.Millisecond {
			return &quota.RuleError{Rule: rule.Name, Reason: fmt.Sprintf("Window %v, the Redis store needs at least 1ms", rule.Window)}
		}
		if rule.Window%time.Second != 0 && rule.Window >= maxExact/2 {
			return &quota.RuleError{Rule: rule.Name, Reason: fmt.Sprintf("Window %v, the Redis store needs whole seconds for windows past 2^52ns (about 52 days)", rule.Window)}
		}
	case quota.TokenBucket:
		if !store.SpanWithin(rule, n, maxExact) {
			return &quota.RuleError{Rule: rule.Name, Reason: fmt.Sprintf("burst and cost %d span more than the Redis store's 2^53ns (about 104 days)", n)}
		}
	}
	return nil
}

// CheckRule reports whether the store can enforce rule (quota.RuleChecker),
// with the error a call with that rule would return.
func (s *Store) CheckRule(rule quota.Rule) error {
	return check(rule, quota.Subject(""), 1)
}
