package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/admitgo/admit/internal/subject"
)

// A decision is the working state of one request, pooled.
type decision struct {
	matches []match
	hits    []uint64
	counted []int // per descriptor: its index in batch, or in takes for a token bucket, or -1
	batch   []Hit
	send    []Hit // the hits of batch the counter is asked about (see split)
	from    []int // per hit of send: its index in batch
	sent    []int // per hit of batch: its index in send, or -1 when the local cache answered it
	takes   []take
	key     []byte // the hashed key being built
	failed  bool   // a store failure was counted for this request
}

// maxPooledKey bounds the key buffer a pooled decision keeps, so that one
// request of huge values does not hold its buffer for good.
const maxPooledKey = 4 << 10

var decisions = sync.Pool{New: func() any { return new(decision) }}

// ShouldRateLimit decides req as envoyproxy/ratelimit decides it: per
// descriptor the most specific limit of req's domain, every limited
// descriptor's hits counted in its unit's window (over the limit or not),
// OVER_LIMIT for a descriptor whose count then passes its limit, and
// OVER_LIMIT overall when any does; replaced, unlimited, shadow and quota
// mode rules as there. A token-bucket rule's descriptor instead spends its
// hits from its bucket when they fit, and is OVER_LIMIT, spending nothing,
// when they do not. The error is a *connect.Error: INVALID_ARGUMENT for a
// request outside the bounds (see [MaxDescriptors]) or that
// envoyproxy/ratelimit refuses, UNAVAILABLE when the counter or the
// limiter fails under [quota.FailError]. A token bucket whose rule the limiter
// refuses is OVER_LIMIT under every policy.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if err := check(req); err != nil {
		return nil, s.refuse(ctx, err)
	}
	cfg := s.config.Load()
	d := decisions.Get().(*decision)
	defer d.release()
	var clamped bool
	d.hits, clamped = hitsAddends(req, d.hits)
	if clamped {
		s.metrics.refused.Add(ctx, 1, s.metrics.reasons[reasonHitsClamped]...)
	}
	unlimited, err := d.lookup(cfg, req)
	if err != nil {
		return nil, s.refuse(ctx, err)
	}
	if unlimited < 0 {
		s.metrics.refused.Add(ctx, 1, s.metrics.reasons[reasonUnknownDomain]...)
	}
	d.keys(req)
	now := s.now()
	if len(d.batch) > 0 {
		if now, err = s.count(ctx, d); err != nil {
			return nil, err
		}
	}
	if len(d.takes) > 0 {
		if err := s.take(ctx, d); err != nil {
			return nil, err
		}
	}
	resp := s.respond(ctx, req, d, now.Unix())
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
		s.metrics.requests.Add(ctx, 1, s.metrics.overOpts...)
	} else {
		s.metrics.requests.Add(ctx, 1, s.metrics.okOpts...)
	}
	return resp, nil
}

func (d *decision) release() {
	clear(d.matches)
	clear(d.batch)
	clear(d.send)
	clear(d.takes)
	key := d.key[:0]
	if cap(key) > maxPooledKey {
		key = nil
	}
	*d = decision{matches: d.matches[:0], hits: d.hits[:0], counted: d.counted[:0], batch: d.batch[:0],
		send: d.send[:0], from: d.from[:0], sent: d.sent[:0], takes: d.takes[:0], key: key}
	decisions.Put(d)
}

// refuse counts a malformed request and returns its answer.
func (s *Service) refuse(ctx context.Context, err error) error {
	var m *malformed
	if errors.As(err, &m) {
		s.metrics.refused.Add(ctx, 1, s.metrics.reasons[m.reason]...)
	}
	s.metrics.requests.Add(ctx, 1, s.metrics.errorOpts...)
	return invalidArgument(err)
}

// lookup finds each descriptor's limit, then drops those another matched
// limit replaces and those that are unlimited, as envoyproxy/ratelimit
// does. It returns the count of unlimited descriptors, or -1 for an
// unknown domain.
func (d *decision) lookup(cfg *Config, req *pb.RateLimitRequest) (int, error) {
	var replaced map[string]bool
	known := true
	for i, desc := range req.GetDescriptors() {
		m, ok, err := cfg.lookup(req.GetDomain(), desc)
		if err != nil {
			return 0, &malformed{reasonLimitUnit, fmt.Sprintf("descriptor %d: %v", i, err)}
		}
		known = ok
		if m.rule != nil && len(m.rule.replaces) > 0 {
			if replaced == nil {
				replaced = make(map[string]bool)
			}
			for _, r := range m.rule.replaces {
				replaced[r] = true
			}
		}
		d.matches = append(d.matches, m)
	}
	unlimited := 0
	for i, m := range d.matches {
		switch {
		case m.rule == nil:
		case m.rule.unlimited:
			unlimited++
		case m.rule.name != "" && replaced[m.rule.name]:
			d.matches[i].rule = nil
		}
	}
	if !known {
		return -1, nil
	}
	return unlimited, nil
}

// keys builds the counter hit, or the token bucket's take, of every
// limited descriptor, keyed by the hash of
// envoyproxy/ratelimit's cache key without its prefix and window (domain,
// then each entry's key and value, a share_threshold wildcard in place of
// the value), so that two descriptors share a count exactly when they
// share one there, and no request value reaches a store.
func (d *decision) keys(req *pb.RateLimitRequest) {
	for i, m := range d.matches {
		if m.rule == nil || m.rule.unlimited {
			d.counted = append(d.counted, -1)
			continue
		}
		// Each part is written after its length: the reference joins them
		// with "_", so that a value holding "_key_value" names another
		// descriptor's counter; admit's keys are hashed and never shared
		// with the reference's store, so they need not copy that.
		d.key = appendPart(d.key[:0], req.GetDomain())
		for j, e := range req.GetDescriptors()[i].GetEntries() {
			d.key = appendPart(d.key, e.GetKey())
			if j < len(m.patterns) && m.patterns[j] != "" {
				d.key = appendPart(d.key, m.patterns[j])
			} else {
				d.key = appendPart(d.key, e.GetValue())
			}
		}
		if m.rule.bucket != nil {
			d.counted = append(d.counted, len(d.takes))
			d.takes = append(d.takes, take{rule: m.rule.bucket, subject: subject.Of(d.key), cost: d.hits[i]})
			continue
		}
		d.counted = append(d.counted, len(d.batch))
		d.batch = append(d.batch, Hit{Key: subject.Of(d.key), Window: m.rule.window, N: d.hits[i], Limit: uint64(m.rule.limit.GetRequestsPerUnit())})
	}
}

// appendPart appends s to b after its length, so that no two lists of
// parts append the same bytes.
func appendPart(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// respond builds the response from the counts, at now (Unix seconds).
func (s *Service) respond(ctx context.Context, req *pb.RateLimitRequest, d *decision, now int64) *pb.RateLimitResponse {
	resp, sts, resets := newResponse(len(d.matches))
	code := pb.RateLimitResponse_OK
	var closest *pb.RateLimitResponse_DescriptorStatus
	var closestReset int64 // its duration_until_reset, kept when quota mode drops it
	least := uint32(math.MaxUint32)
	withHeaders := s.headers != Headers{}
	for i, m := range d.matches {
		st := &sts[i]
		s.status(ctx, d, i, now, st, &resets[i])
		if withHeaders && st.CurrentLimit != nil && st.LimitRemaining < least {
			closest, least, closestReset = st, st.LimitRemaining, resets[i].Seconds
		}
		switch {
		case m.rule != nil && m.rule.unlimited:
			st.LimitRemaining = math.MaxUint32
		case st.Code != pb.RateLimitResponse_OVER_LIMIT:
		case s.quota || m.rule.quota:
			// Quota mode: OK, and no duration_until_reset, as there.
			st.Code, st.DurationUntilReset = pb.RateLimitResponse_OK, nil
		default:
			code = pb.RateLimitResponse_OVER_LIMIT
			closest, least, closestReset = st, 0, resets[i].Seconds
		}
		resp.Statuses[i] = st
	}
	if closest != nil {
		resp.ResponseHeadersToAdd = s.limitHeaders(closest, closestReset)
	}
	if code == pb.RateLimitResponse_OVER_LIMIT && s.shadow {
		code = pb.RateLimitResponse_OK
	}
	resp.OverallCode = code
	return resp
}

// answer is a response with room for one descriptor's status, as Envoy
// mostly asks, so that such a response is one allocation rather than four.
type answer struct {
	resp     pb.RateLimitResponse
	statuses [1]*pb.RateLimitResponse_DescriptorStatus
	status   [1]pb.RateLimitResponse_DescriptorStatus
	reset    [1]durationpb.Duration
}

// newResponse returns a response of n statuses to fill, the statuses, and
// a duration_until_reset for each.
func newResponse(n int) (*pb.RateLimitResponse, []pb.RateLimitResponse_DescriptorStatus, []durationpb.Duration) {
	if n == 1 {
		a := new(answer)
		a.resp.Statuses = a.statuses[:]
		return &a.resp, a.status[:], a.reset[:]
	}
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, n)}
	return resp, make([]pb.RateLimitResponse_DescriptorStatus, n), make([]durationpb.Duration, n)
}

// An outcome is one limited descriptor's answer, from its window's count
// or its bucket's take, and what its metrics count.
type outcome struct {
	over      bool
	remaining uint32
	reset     int64 // duration_until_reset, seconds
	// limit, before, after and hits are what metrics.record measures:
	// the limit, the count before and after the hits, and the hits.
	limit, before, after, hits uint64
	cached                     bool // answered by the local over-limit cache
}

// windowOutcome is the outcome of a fixed window's hit at now (Unix
// seconds), as envoyproxy/ratelimit's base limiter builds it: over, with
// nothing remaining, once the count after the hits passes the limit, else
// the limit less the count remaining; reset at the window's end. A hit the
// local cache answered (cached) is over, its count unknown. The count
// before is the count after less the hits, wrapping as the reference's
// does when the hits were not counted (StopIncrementOverLimit), so that
// the metrics count what it counts.
func windowOutcome(h Hit, r *rule, now int64, cached bool) outcome {
	limit := uint64(r.limit.GetRequestsPerUnit())
	w := int64(r.window / time.Second)
	o := outcome{reset: w - ((now%w)+w)%w, limit: limit, after: h.Count, before: h.Count - h.N, hits: h.N, cached: cached}
	switch {
	case cached:
		o.over = true
	case h.Count > limit:
		o.over = true
	default:
		o.remaining = uint32(limit - h.Count)
	}
	return o
}

// status fills st, descriptor i's status, from its outcome: OVER_LIMIT
// when over (OK for a shadow_mode rule), else OK; its
// duration_until_reset is reset.
func (s *Service) status(ctx context.Context, d *decision, i int, now int64, st *pb.RateLimitResponse_DescriptorStatus, reset *durationpb.Duration) {
	m := d.matches[i]
	st.Code = pb.RateLimitResponse_OK
	if d.counted[i] < 0 {
		return
	}
	var o outcome
	if m.rule.bucket != nil {
		o = d.takes[d.counted[i]].outcome()
	} else {
		k := d.counted[i]
		o = windowOutcome(d.batch[k], m.rule, now, d.sent[k] < 0)
	}
	reset.Seconds = o.reset
	st.CurrentLimit, st.DurationUntilReset, st.LimitRemaining = m.rule.limit, reset, o.remaining
	if o.over {
		st.Code = pb.RateLimitResponse_OVER_LIMIT
		if m.rule.shadow {
			st.Code = pb.RateLimitResponse_OK
		}
	}
	// Names that hold request values give way to a bounded name once
	// MaxMetricLimits are taken.
	key, fallback := m.rule.fullKey, m.rule.fullKey
	switch {
	case m.metricKey != "":
		key = m.metricKey
	case m.rule.override:
		fallback = "overflow"
	}
	s.metrics.record(ctx, s.metrics.limit(key, fallback), o, s.near, m.rule.shadow)
}

// limitHeaders are the headers of the descriptor closest to its limit,
// whose duration_until_reset is reset seconds.
func (s *Service) limitHeaders(st *pb.RateLimitResponse_DescriptorStatus, reset int64) []*core.HeaderValue {
	var hs []*core.HeaderValue
	if s.headers.Limit != "" {
		hs = append(hs, &core.HeaderValue{Key: s.headers.Limit, Value: strconv.FormatUint(uint64(st.CurrentLimit.GetRequestsPerUnit()), 10)})
	}
	if s.headers.Remaining != "" {
		hs = append(hs, &core.HeaderValue{Key: s.headers.Remaining, Value: strconv.FormatUint(uint64(st.LimitRemaining), 10)})
	}
	if s.headers.Reset != "" {
		hs = append(hs, &core.HeaderValue{Key: s.headers.Reset, Value: strconv.FormatInt(reset, 10)})
	}
	return hs
}
