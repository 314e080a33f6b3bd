package rls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit/internal/storedown"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
)

// Headers names the response headers a [Service] asks Envoy to add, as
// envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED does: the limit,
// the remaining and the seconds to reset of the descriptor closest to its
// limit (an over-limit one first). An empty name leaves that header out.
type Headers struct {
	Limit, Remaining, Reset string
}

// DefaultHeaders are envoyproxy/ratelimit's default header names.
var DefaultHeaders = Headers{Limit: "RateLimit-Limit", Remaining: "RateLimit-Remaining", Reset: "RateLimit-Reset"}

// Options configure a [Service]: what other packages' constructors call
// their Config, named apart since [Config] is a loaded configuration, as
// envoyproxy/ratelimit names its files. The zero value serves no domain,
// counts and decides token buckets in memory, and answers UNAVAILABLE when
// counting fails.
type Options struct {
	// Config is the configuration decided by until [Service.Reload]; nil
	// means one without domains, under which every descriptor is unknown
	// and answered OK.
	Config *Config
	// Counter counts the hits; nil means a [memquota.Counter] with its
	// defaults, which keeps at most memquota.DefaultMaxCounters counters
	// and never forgets one over its limit. Share a Redis or PostgreSQL
	// counter to share the limits across replicas.
	Counter Counter
	// PerSecondCounter counts the hits of limits whose unit is a second,
	// as envoyproxy/ratelimit's REDIS_PERSECOND store does, and Counter
	// the others; nil means Counter counts every hit. Each has its own
	// failure state: while one fails, a request that needs only the other
	// is counted as usual.
	PerSecondCounter Counter
	// Failure is what a request gets while Counter, PerSecondCounter or
	// Limiter fails:
	// quota.FailError (the zero value's meaning here), FailClosed,
	// FailOpen or FailLocal.
	Failure quota.Failure
	// Fallback counts while Counter fails under FailLocal; nil means a
	// [memquota.Counter] with its defaults. Other policies ignore it.
	Fallback Counter
	// Limiter decides the token buckets of the configuration's
	// "algorithm: token-bucket" rules, with its GCRA, charging each
	// descriptor's hits_addend at once; nil means a [memquota.Memory] with
	// its defaults. Share the Redis or PostgreSQL store the Counter counts
	// in (a redisquota.Store or pgquota.Store) to share the buckets across
	// replicas. Under FailLocal, while it fails, a [memquota.Memory] of the
	// service's own decides instead. A configuration without token buckets
	// never calls it.
	Limiter quota.Charger
	// ShadowMode answers OK overall whatever the descriptors' codes, as
	// envoyproxy/ratelimit's SHADOW_MODE: the statuses still say
	// OVER_LIMIT, and the hits are still counted.
	ShadowMode bool
	// QuotaMode answers OK for every over-limit descriptor, as
	// envoyproxy/ratelimit's QUOTA_MODE and a rule's quota_mode do.
	QuotaMode bool
	// Headers, when any name is set, adds the limit headers to every
	// response with a limited descriptor; the zero value adds none.
	Headers Headers
	// StopIncrementOverLimit reads a request's counts before counting it
	// and, when a descriptor's hits would take its count past its limit,
	// counts only the descriptors that would pass theirs, as
	// envoyproxy/ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT does:
	// a request one limit refuses spends nothing of its other limits. The
	// descriptors not counted answer by their counts without the request.
	// It costs a second call to the counter per request; the two calls
	// are not one transaction, as the reference's are not.
	StopIncrementOverLimit bool
	// LocalCacheBytes, above 0, keeps in this process the fixed-window
	// descriptors the counter found past their limits, until their windows
	// end, and answers them OVER_LIMIT without asking the counter or
	// counting them, as envoyproxy/ratelimit's LOCAL_CACHE_SIZE_IN_BYTES
	// does; it bounds the memory that table takes (see
	// [LocalCacheEntryBytes]), at least 512 KiB as the reference's. 0
	// keeps none. A window is timed by Now, so the replica's clock and the
	// store's should agree.
	LocalCacheBytes int
	// Now is the clock of the local over-limit cache and of the answers no
	// store timed (a request answered from the cache or by a failure
	// policy); nil means time.Now. The counter and the limiter keep their
	// own clocks.
	Now func() time.Time
	// NearLimitRatio is the share of a limit past which hits count as
	// near_limit in admit.rls.hits; 0 means 0.8, envoyproxy/ratelimit's
	// NEAR_LIMIT_RATIO default.
	NearLimitRatio float64
	// MeterProvider receives the service's metrics; nil means the global
	// meter provider.
	MeterProvider metric.MeterProvider
	// Logger receives reloads and store failures; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Service decides envoyproxy/ratelimit's requests as it decides them, on
// admit's counters. Use [New]; the zero Service is not usable. It is safe
// for concurrent use, and [Service.Reload] may run while it decides.
type Service struct {
	counters counters // Counter, and PerSecondCounter when set
	fallback Counter  // nil unless Failure is FailLocal
	limiter  quota.Charger
	local    quota.Charger // nil unless Failure is FailLocal
	failure  quota.Failure // resolved: never the zero value
	shadow   bool
	quota    bool
	stop     bool       // StopIncrementOverLimit
	cache    *overCache // nil unless LocalCacheBytes > 0
	now      func() time.Time
	headers  Headers
	near     float64
	metrics  *metrics
	log      *slog.Logger
	storeLog rate.Sometimes // throttles the log of store failures
	// counters' breakers and limiterDown keep calls from asking a store that
	// failed within the last half second (see internal/storedown), so that an
	// outage costs two timeouts a second rather than one a call. Their
	// time line is the monotonic time since epoch.
	limiterDown storedown.Breaker
	epoch       time.Time

	config atomic.Pointer[Config]
}

// New returns a service configured by o.
func New(o Options) (*Service, error) {
	if !o.Failure.Valid() {
		return nil, fmt.Errorf("rls: Failure %d, want quota.FailError, FailClosed, FailOpen or FailLocal", o.Failure)
	}
	if o.LocalCacheBytes < 0 {
		return nil, fmt.Errorf("rls: LocalCacheBytes %d, want 0 (no cache) or more", o.LocalCacheBytes)
	}
	if o.NearLimitRatio < 0 || o.NearLimitRatio > 1 {
		return nil, fmt.Errorf("rls: NearLimitRatio %v, want 0 (the default, 0.8) to 1", o.NearLimitRatio)
	}
	s := &Service{counters: counters{main: o.Counter, second: o.PerSecondCounter}, failure: o.Failure.Or(quota.FailError), shadow: o.ShadowMode, quota: o.QuotaMode,
		headers: o.Headers, near: o.NearLimitRatio, log: o.Logger, storeLog: rate.Sometimes{Interval: 10 * time.Second}, epoch: time.Now(),
		stop: o.StopIncrementOverLimit, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if o.LocalCacheBytes > 0 {
		s.cache = newOverCache(o.LocalCacheBytes)
	}
	if s.near == 0 {
		s.near = 0.8
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.counters.now, s.counters.log = s.sinceStart, s.log
	var err error
	if s.metrics, err = newMetrics(o.MeterProvider, s.cache); err != nil {
		return nil, fmt.Errorf("rls: metrics: %w", err)
	}
	if s.counters.main == nil {
		if s.counters.main, err = memquota.NewCounter(memquota.CounterConfig{MeterProvider: o.MeterProvider}); err != nil {
			return nil, fmt.Errorf("rls: %w", err)
		}
	}
	s.limiter = o.Limiter
	if s.limiter == nil {
		if s.limiter, err = memquota.New(memquota.Config{MeterProvider: o.MeterProvider}); err != nil {
			return nil, fmt.Errorf("rls: %w", err)
		}
	}
	if s.failure == quota.FailLocal {
		s.fallback = o.Fallback
		if s.fallback == nil {
			if s.fallback, err = memquota.NewCounter(memquota.CounterConfig{MeterProvider: o.MeterProvider}); err != nil {
				return nil, fmt.Errorf("rls: %w", err)
			}
		}
		if s.local, err = memquota.New(memquota.Config{MeterProvider: o.MeterProvider}); err != nil {
			return nil, fmt.Errorf("rls: %w", err)
		}
	}
	cfg := o.Config
	if cfg == nil {
		cfg = &Config{}
	}
	if err := s.checkBuckets(cfg); err != nil {
		return nil, err
	}
	s.config.Store(cfg)
	if o.Config != nil {
		// The first load, counted as envoyproxy/ratelimit's
		// config_load_success counts it.
		s.metrics.loads.Add(context.Background(), 1, s.metrics.loadOpts[1]...)
	}
	return s, nil
}

// Reload makes cfg the configuration later requests are decided by;
// requests being decided finish under the one they started with. Counts
// carry over: a limit whose domain and descriptor stay the same keeps its
// window's count. A configuration with a token bucket the limiter refuses
// (see [quota.RuleChecker]) is refused, and the one in force stays.
func (s *Service) Reload(cfg *Config) error {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := s.checkBuckets(cfg); err != nil {
		s.metrics.loads.Add(context.Background(), 1, s.metrics.loadOpts[0]...)
		return err
	}
	s.config.Store(cfg)
	s.metrics.loads.Add(context.Background(), 1, s.metrics.loadOpts[1]...)
	return nil
}

// LoadFile loads the configuration at path (see [Load]) and reloads with
// it. When it cannot be loaded, the service keeps deciding by the one it
// has, the failure is counted, and the error returned.
func (s *Service) LoadFile(path string) error {
	cfg, err := Load(path)
	if err != nil {
		s.metrics.loads.Add(context.Background(), 1, s.metrics.loadOpts[0]...)
		return err
	}
	return s.Reload(cfg)
}

// checkBuckets refuses cfg when the limiter, asked before any call,
// refuses one of its token buckets: such a rule would fail every call, and
// under an open or local policy after an outage admit them.
func (s *Service) checkBuckets(cfg *Config) error {
	checker, ok := s.limiter.(quota.RuleChecker)
	if !ok {
		return nil
	}
	for _, r := range cfg.buckets() {
		if err := checker.CheckRule(r.rule); err != nil {
			return fmt.Errorf("rls: %s: the store cannot enforce this token bucket: %w", r.where, err)
		}
	}
	return nil
}

// Config returns the configuration the service decides by.
func (s *Service) Config() *Config { return s.config.Load() }

// errStore is wrapped by the error of a request answered UNAVAILABLE.
var errStore = errors.New("rls: the store cannot count")

// errDown is the failure of a call not asked of a store that is down.
var errDown = errors.New("rls: the store is down; not asked until a probe, twice a second, finds it answering")

// sinceStart is the time on the breakers' time line: monotonic, so a step
// of the wall clock neither holds a down store back nor probes it early.
func (s *Service) sinceStart() int64 { return int64(time.Since(s.epoch)) }
