package rls

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/admitgo/admit/quota"
)

// This file is admit's one extension of envoyproxy/ratelimit's
// configuration: a rate_limit with "algorithm: token-bucket" is a token
// bucket that refills requests_per_unit tokens a unit, continuously, and
// holds at most "burst" (requests_per_unit unless given), decided by the
// service's [quota.Charger] as a [quota.TokenBucket] instead of counted in
// fixed windows; "fixed-window", the reference's way, is the default. The
// algorithm is read by quota.ParseAlgorithm, as the proxy's config file
// reads it. The reference refuses both keys, so a file it loads means here
// what it means there.

// maxFill bounds, in nanoseconds, the time an empty bucket takes to fill
// (burst × unit ÷ requests_per_unit), about 52 days. The Redis store
// computes in doubles, exact to 2^53ns, over the burst and one call's
// cost, and a cost asked of a limiter never passes the burst (see
// take.n): within the bound every store decides exactly, and nothing
// overflows.
const maxFill = 1 << 52

// bucket reads the extension's keys of rate_limit rm into ru: nothing for
// a fixed window, a token-bucket rule for a token bucket.
func (r reader) bucket(rm map[string]*yaml.Node, rf string, ru *rule) error {
	text, err := r.str(rm, "algorithm", rf)
	if err != nil {
		return err
	}
	alg := quota.FixedWindow
	if text != "" {
		if alg, err = quota.ParseAlgorithm(text); err != nil {
			return r.errorf(rm["algorithm"], join(rf, "algorithm"), "%q: want %v or %v", text, quota.FixedWindow, quota.TokenBucket)
		}
	}
	burstAt := rm["burst"]
	if burstAt != nil && burstAt.Tag == "!!null" {
		burstAt = nil
	}
	if alg == quota.FixedWindow {
		if burstAt != nil {
			return r.errorf(burstAt, join(rf, "burst"), "only with algorithm: %v", quota.TokenBucket)
		}
		return nil
	}
	requests := ru.limit.GetRequestsPerUnit()
	switch {
	case ru.unlimited:
		return r.errorf(rm["algorithm"], join(rf, "algorithm"), "not with unlimited: an unlimited descriptor has no bucket")
	case requests == 0:
		at := rm["requests_per_unit"]
		if at == nil {
			at = rm["algorithm"]
		}
		return r.errorf(at, join(rf, "requests_per_unit"), "0: a token bucket refills at least one token a unit")
	}
	if refill(ru.window, requests) < minRefill {
		return r.errorf(rm["requests_per_unit"], join(rf, "requests_per_unit"), "%d a %s is more than a token a microsecond, faster than the stores time a bucket exactly",
			requests, strings.ToLower(ru.limit.GetUnit().String()))
	}
	burst := requests
	if burstAt != nil {
		n, err := r.uint32Field(rm, "burst", rf)
		if err != nil || n == 0 {
			return r.errorf(burstAt, join(rf, "burst"), "%q: want a whole number from 1 to 4294967295", burstAt.Value)
		}
		burst = n
	}
	unit := strings.ToLower(ru.limit.GetUnit().String())
	if every := refill(ru.window, requests); uint64(burst) > maxFill/uint64(every) {
		at, field := rm["unit"], "unit"
		if burstAt != nil {
			at, field = burstAt, "burst"
		}
		days := float64(burst) * float64(every) / float64(24*time.Hour)
		return r.errorf(at, join(rf, field), "a bucket of %d refilled %d a %s fills in %.4g days, past the 52.1 days (2^52ns) every store counts exactly",
			burst, requests, unit, days)
	}
	// The name holds the unit, so that two limits of different units on
	// one descriptor have two buckets, as they have two counts.
	ru.bucket = &quota.Rule{Name: "rls." + unit, Limit: int(requests), Window: ru.window, Algorithm: quota.TokenBucket, Burst: int(burst)}
	return nil
}

// minRefill bounds how fast a bucket refills: a token a microsecond. The
// stores time a token in whole nanoseconds, the unit over
// requests_per_unit rounded down, so a faster one would refill faster
// than it says by up to a nanosecond a token; at a microsecond, by 0.1 %.
const minRefill = time.Microsecond

// refill is the time one token takes to come back, as the stores compute
// it: the unit over requests_per_unit, at least a nanosecond.
func refill(window time.Duration, requests uint32) time.Duration {
	return max(window/time.Duration(requests), 1)
}

// A take is one token-bucket descriptor's call to the limiter: asked by
// decision.keys, answered by Service.take.
type take struct {
	rule    *quota.Rule
	subject string
	cost    uint64 // the descriptor's hits_addend
	d       quota.Decision
	refused bool
}

// n is the cost to ask the limiter: the hits_addend, or, for more than
// the bucket holds, which can never pass, 0, a look that spends nothing
// and still reports the tokens left.
func (t *take) n() int {
	if t.cost > uint64(t.rule.Burst) {
		return 0
	}
	return int(t.cost)
}

// judge sets refused from the limiter's decision: refused when it could
// not pay the cost, or when the cost passes the burst and was only looked
// at; a cost of 0 always fits.
func (t *take) judge() { t.refused = t.cost > 0 && (t.n() == 0 || !t.d.Allowed) }

// take decides d's token-bucket descriptors, one limiter call each, in
// order. Once the limiter fails, or while it is down and no probe is due,
// the failure policy decides the rest of the request without asking it,
// so that an outage costs two timeouts a second rather than one a
// descriptor.
func (s *Service) take(ctx context.Context, d *decision) error {
	var down error // the limiter's failure, once it failed
	for i := range d.takes {
		t := &d.takes[i]
		if down == nil && !s.limiterDown.Ask(s.sinceStart()) {
			s.failed(ctx, d, "rls: the limiter cannot decide", errDown)
			down = errDown
		}
		if down == nil {
			var err error
			if t.d, err = s.limiter.AllowN(storeContext(ctx), *t.rule, t.subject, t.n()); err == nil {
				s.answered(&s.limiterDown, "rls: the limiter decides again")
				t.judge()
				continue
			}
			if errors.Is(err, quota.ErrRule) || errors.Is(err, quota.ErrSubject) {
				// A rule or key the store refuses is the configuration's
				// fault, not an outage: the descriptor is over its limit
				// under every policy, since an error would let Envoy's
				// failure_mode_deny: false admit it. Logged and counted as
				// a store failure, so that it is seen.
				s.failed(ctx, d, "rls: the store refuses a token bucket's rule; its descriptors are over their limit", err)
				t.d, t.refused = quota.Decision{}, true
				continue
			}
			s.limiterDown.Failed(s.sinceStart())
			s.failed(ctx, d, "rls: the limiter cannot decide", err)
			down = err
		}
		switch s.failure {
		case quota.FailClosed:
			t.d, t.refused = quota.Decision{}, true
		case quota.FailOpen:
			t.d, t.refused = quota.Decision{Allowed: true, Remaining: t.rule.Burst}, false
		case quota.FailLocal:
			var err error
			if t.d, err = s.local.AllowN(ctx, *t.rule, t.subject, t.n()); err != nil {
				return unavailable(fmt.Errorf("%w: the fallback failed too: %w", errStore, err))
			}
			t.judge()
		default:
			return unavailable(fmt.Errorf("%w: %w", errStore, down))
		}
	}
	return nil
}

// outcome is the take's answer. Its metrics measure the hits against the
// burst as a window's against its limit, with the tokens in use before
// and after them; a refused cost counts whole past the burst, since none
// of it was spent.
func (t *take) outcome() outcome {
	burst := uint64(t.rule.Burst)
	left := uint64(min(max(t.d.Remaining, 0), t.rule.Burst))
	o := outcome{over: t.refused, remaining: uint32(left), reset: ceilSeconds(t.untilFull(left)), limit: burst, hits: t.cost}
	if t.refused {
		o.before, o.after = burst, burst+t.cost
	} else {
		o.after = burst - left
		o.before = o.after - min(t.cost, o.after)
	}
	return o
}

// untilFull is how long the bucket takes to be full again, left tokens
// being whole tokens now. A limiter's RetryAfter is when the bucket will
// hold the tokens of the call it judged (this call's cost when it refused
// it, one when it allowed it), and the rest come back at the refill rate
// from then: exact. Without one, at least a token is left, and only whole
// tokens are known, so the tokens short of the burst are counted whole:
// late by less than one token's refill, never early.
func (t *take) untilFull(left uint64) time.Duration {
	every := refill(t.rule.Window, uint32(t.rule.Limit))
	if t.d.RetryAfter <= 0 {
		return time.Duration(uint64(t.rule.Burst)-left) * every
	}
	judged := 1
	if !t.d.Allowed && t.n() > 0 {
		judged = t.n()
	}
	return t.d.RetryAfter + time.Duration(t.rule.Burst-judged)*every
}

// ceilSeconds rounds d up to whole seconds: duration_until_reset is whole
// seconds in the reference's answers, and Envoy's reset header reads only
// the seconds, so a fraction cut off would invite a retry too early.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
