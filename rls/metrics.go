package rls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/meter"
	"github.com/admitgo/admit/quota"
)

// MaxMetricLimits bounds the limits named in admit.rls.hits. A file's own
// limits are few; detailed_metric, value_to_metric and descriptors'
// own limits name series by request values, and once this many names were
// seen the rest are counted under the limit's name in the file (or
// "overflow" for descriptors' own limits). At six outcomes a limit, the
// series stay below the OpenTelemetry SDK's default cardinality limit of
// 2,000 per instrument, past which it would merge them all.
const MaxMetricLimits = 256

// hitOutcomes are admit.rls.hits' outcomes, envoyproxy/ratelimit's stat
// names.
const (
	hitsTotal = iota
	hitsWithin
	hitsOver
	hitsNear
	hitsShadow
	hitsLocalCache
	hitOutcomeCount
)

var hitOutcomeNames = [hitOutcomeCount]string{"total_hits", "within_limit", "over_limit", "near_limit", "shadow_mode", "over_limit_with_local_cache"}

// metrics are a service's instruments, created once, with the attribute
// sets the hot path uses built ahead.
type metrics struct {
	requests  metric.Int64Counter
	refused   metric.Int64Counter
	hits      metric.Int64Counter
	failures  metric.Int64Counter
	loads     metric.Int64Counter
	okOpts    []metric.AddOption
	overOpts  []metric.AddOption
	errorOpts []metric.AddOption
	reasons   map[string][]metric.AddOption
	policies  [quota.FailLocal + 1][]metric.AddOption // by the service's resolved Failure
	loadOpts  [2][]metric.AddOption                   // failed, loaded

	mu     sync.Mutex // guards limits
	limits map[string]*limitStats
}

// limitStats are one limit's admit.rls.hits attribute sets.
type limitStats struct {
	opts [hitOutcomeCount][]metric.AddOption
}

func newMetrics(mp metric.MeterProvider, cache *overCache) (*metrics, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	mt := mp.Meter(meter.Name)
	m := &metrics{reasons: make(map[string][]metric.AddOption), limits: make(map[string]*limitStats)}
	var err error
	for _, c := range []struct {
		to         *metric.Int64Counter
		name, desc string
	}{
		{&m.requests, "admit.rls.requests", "ShouldRateLimit calls by overall answer: ok, over_limit, or error."},
		{&m.refused, "admit.rls.refused", "Requests refused or changed for their shape, by reason; unknown_domain and hits_clamped are answered."},
		{&m.hits, "admit.rls.hits", "Hits per limit, as envoyproxy/ratelimit's per-limit stats count them."},
		{&m.failures, "admit.rls.store_failures", "Requests the store could not decide, or that did not ask it while it was down, by the failure policy that answered them."},
		{&m.loads, "admit.rls.config_loads", "Configuration loads, by result: loaded, or failed (the previous one is kept)."},
	} {
		if *c.to, err = mt.Int64Counter(c.name, metric.WithDescription(c.desc)); err != nil {
			return nil, err
		}
	}
	outcome := func(o string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.rls.outcome", o)))}
	}
	m.okOpts, m.overOpts, m.errorOpts = outcome("ok"), outcome("over_limit"), outcome("error")
	for _, r := range reasons {
		m.reasons[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.rls.reason", r)))}
	}
	for _, f := range []quota.Failure{quota.FailError, quota.FailClosed, quota.FailOpen, quota.FailLocal} {
		m.policies[f] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.rls.policy", f.String())))}
	}
	for i, r := range []string{"failed", "loaded"} {
		m.loadOpts[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.rls.result", r)))}
	}
	if cache != nil {
		sets := []attribute.Set{
			lookupHit:  attribute.NewSet(attribute.String("admit.rls.result", "hit")),
			lookupMiss: attribute.NewSet(attribute.String("admit.rls.result", "miss")),
		}
		// Read from counts a look-up adds to when the metrics are
		// collected, so that a look-up costs one atomic add.
		if cache.lookups, err = meter.SharedCounts(mp, "admit.rls.local_cache.lookups", "rls", sets,
			metric.WithDescription("Look-ups of hits in the local over-limit cache, by result: hit (answered OVER_LIMIT without the store) or miss.")); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// limit returns the stats of the limit named key, or of fallback once
// MaxMetricLimits names are taken.
func (m *metrics) limit(key, fallback string) *limitStats {
	key = boundedName(key)
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.limits[key]; s != nil {
		return s
	}
	if len(m.limits) >= MaxMetricLimits {
		key = fallback
		if s := m.limits[key]; s != nil {
			return s
		}
	}
	s := &limitStats{}
	for i, o := range hitOutcomeNames {
		set := attribute.NewSet(attribute.String("admit.rls.limit", key), attribute.String("admit.rls.outcome", o))
		s.opts[i] = []metric.AddOption{metric.WithAttributeSet(set)}
	}
	m.limits[key] = s
	return s
}

// maxMetricName bounds a limit's name in metrics: a name that holds
// request values (detailed_metric, value_to_metric, a descriptor's own
// limit) could otherwise hold a megabyte, kept for the process's life in
// each of MaxMetricLimits series.
const maxMetricName = 128

// boundedName returns name, or past maxMetricName its first 96 bytes at
// most, cut before a character, and a hash of the whole, so that distinct
// long names stay distinct. A cut inside a character would make the label
// invalid UTF-8, which the Prometheus exporter drops, with the series.
func boundedName(name string) string {
	if len(name) <= maxMetricName {
		return name
	}
	cut := 96
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(name))
	return name[:cut] + "~" + hex.EncodeToString(sum[:8])
}

// record counts one descriptor's hits, o, as envoyproxy/ratelimit's base
// limiter counts them: all of them in total_hits; within_limit when the
// count after stays at the limit; over_limit for the hits past it, and
// near_limit for those between the near-limit threshold and the limit;
// shadow_mode for over-limit hits a shadow rule let through. Hits the
// local over-limit cache answered are all over_limit, and
// over_limit_with_local_cache.
func (m *metrics) record(ctx context.Context, s *limitStats, o outcome, near float64, shadow bool) {
	add := func(o int, n uint64) {
		if n > 0 {
			m.hits.Add(ctx, int64(min(n, math.MaxInt64)), s.opts[o]...)
		}
	}
	limit, before, after, hits := o.limit, o.before, o.after, o.hits
	add(hitsTotal, hits)
	if o.cached {
		add(hitsOver, hits)
		add(hitsLocalCache, hits)
		if shadow {
			add(hitsShadow, hits)
		}
		return
	}
	nearAt := uint64(math.Floor(float64(float32(limit) * float32(near))))
	if after <= limit {
		add(hitsWithin, hits)
		switch {
		case after <= nearAt:
		case before >= nearAt:
			add(hitsNear, hits)
		default:
			add(hitsNear, after-nearAt)
		}
		return
	}
	over := hits
	if before < limit {
		over = after - limit
		add(hitsNear, limit-max(nearAt, before))
	}
	add(hitsOver, over)
	if shadow {
		add(hitsShadow, over)
	}
}
