package admit

import (
	"context"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/internal/algorithm"
	"github.com/admitgo/admit/internal/storedown"
	"github.com/admitgo/admit/quota"
)

// shared is the engine of a group whose tokens a shared store decides, so
// that several replicas enforce one budget. The caps stay in this process:
// a request takes its client's and its group's slots first, then asks the
// store, and gives the slots back if the store refuses.
type shared struct {
	g    *group
	rule quota.Rule
	logs rate.Sometimes // throttles the log of store failures

	// fallback, under quota.FailLocal, decides while the store fails: a
	// group of the same name with the budget's share of the tokens and no
	// caps of its own. nil: the budget's Failure decides.
	fallback *group
	// down, on the door's time line, keeps the group from asking a store
	// that failed but twice a second (see internal/storedown), so that
	// requests do not each wait for a store that is likely down.
	down storedown.Breaker
	// storeOpen is what the store's own policy decided on its last failure,
	// for the requests that do not ask it under quota.FailDefault.
	storeOpen atomic.Bool
	// The fallback's buckets run on a time line of their own that stands
	// still while the store answers, so they fill only while the group
	// decides on them: an outage does not open with a burst that refilled
	// while the store was deciding, and a store that fails now and then
	// lets through no more than the store's budget and the fallback's for
	// the time spent on it. paused is the door's time during which the
	// store answered, up to upSince, when it last began to; mu guards both
	// and every change of down between up and down, so that whoever sees the
	// group on its fallback reads a clock that has stopped for the time
	// the store answered.
	mu      sync.Mutex
	paused  int64
	upSince int64
}

func newShared(g *group, now int64) *shared {
	return &shared{g: g, rule: g.budget.rule(g.name), logs: rate.Sometimes{Interval: 10 * time.Second}, upSince: now}
}

// fallbackNow returns the fallback's time at now on the door's time line:
// while the store answers, the time it began to.
func (e *shared) fallbackNow(now int64) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.down.Down() {
		return e.upSince - e.paused
	}
	// A request that read the time before the store last began to answer
	// sees the clock where it stopped, never earlier.
	return max(now, e.upSince) - e.paused
}

// failed sends the group to its fallback until a probe answers, and starts
// the fallback's clock if the store was answering; it reports whether it
// was.
func (e *shared) failed(now int64) (first bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if first = e.down.Failed(now); first {
		e.paused += max(0, now-e.upSince)
	}
	return first
}

// answered sends the group back to its store, and stops the fallback's
// clock, if it was on its fallback; it reports whether it was.
func (e *shared) answered(now int64) (back bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.down.Answered() {
		return false
	}
	e.upSince = max(now, e.upSince)
	return true
}

// admit takes the client's and the group's slots, then asks the store.
// Always-charge groups spend the request's cost there; charge-on-failure
// groups look without spending and need the cost on top of what the
// client's requests in flight in this process hold. A refusal gives the
// slots back.
func (e *shared) admit(ctx context.Context, t *ticket, now int64) verdict {
	g := e.g
	s := &g.shards[t.shard]
	onFailure := g.budget.Charge == ChargeOnFailure
	s.mu.Lock()
	prior := s.perClient[t.key]
	held := s.held[t.key]
	switch {
	case int(prior) >= g.budget.PerClient:
		s.mu.Unlock()
		return g.refusal(outcomeClientConcurrency, 1)
	case !g.takeSlotFor(t):
		s.mu.Unlock()
		return g.refusal(outcomeGroupConcurrency, 1)
	}
	s.perClient[t.key] = prior + 1
	if onFailure {
		s.held[t.key] = held + t.cost // held until the decision or settle
	}
	t.taken, t.held = true, onFailure
	s.mu.Unlock()
	if !e.down.Ask(now) {
		if e.fallback != nil {
			return e.decideLocally(ctx, t, now)
		}
		return e.storeFailed(t, e.failOpen())
	}
	decided := false
	defer func() {
		if !decided { // the store panicked: free the slots and let it unwind
			e.release(t)
		}
	}()

	cost := int(t.cost)
	if onFailure {
		cost = 0
	}
	dec, err := g.budget.Store.AllowN(ctx, e.rule, e.subject(t.key), cost)
	decided = true
	if err != nil && ctx.Err() != nil {
		// The client went away during the call: nobody reads the answer,
		// and the store is not to blame. Taken for an outage, a hang-up
		// timed inside the call would send the group to its fallback, or
		// past a fail-open store, whenever a client liked.
		e.release(t)
		return verdict{outcome: outcomeStoreError, retry: 1}
	}
	if err != nil {
		first := e.failed(now)
		if e.fallback != nil {
			if first {
				g.set.logger.Warn("admit: shared store failed; deciding by this replica's share of the budget until it answers", "group", g.name, "err", err)
			}
			return e.decideLocally(ctx, t, now)
		}
		if g.budget.Failure == quota.FailDefault {
			e.storeOpen.Store(dec.Allowed)
		}
		open := e.failOpen()
		e.logs.Do(func() {
			g.set.logger.Warn("admit: shared store failed; its failure policy decides, and it is asked again twice a second until it answers", "group", g.name, "allowed", open, "err", err)
		})
		return e.storeFailed(t, open)
	}
	if e.down.Down() && e.answered(now) {
		g.set.logger.Info("admit: shared store answers again; deciding by it", "group", g.name)
	}
	allowed := dec.Allowed
	if onFailure {
		allowed = allowed && dec.Remaining >= int(held+t.cost)
	}
	if !allowed {
		e.release(t)
		v := g.refusal(outcomeRateLimited, ceilSeconds(dec.RetryAfter))
		v.reset = v.retry // on a refusal, RateLimit's t is Retry-After
		return v
	}
	return verdict{admitted: true, left: dec.Remaining - int(held), reset: ceilSeconds(e.toFull(dec))}
}

// failOpen reports whether a request the store did not decide is admitted:
// as the budget's Failure says, or under quota.FailDefault as the store's
// own policy decided on its last failure.
func (e *shared) failOpen() bool {
	switch e.g.budget.Failure {
	case quota.FailOpen:
		return true
	case quota.FailClosed:
		return false
	}
	return e.storeOpen.Load()
}

// storeFailed answers a request the store did not decide by the failure
// policy: admitted uncounted when open, else refused with its slots freed.
func (e *shared) storeFailed(t *ticket, open bool) verdict {
	if open {
		t.uncounted = true
		return verdict{admitted: true, outcome: outcomeStoreError}
	}
	e.release(t)
	if e.g.set.shadow {
		return verdict{admitted: true, outcome: outcomeStoreError}
	}
	// A refusing policy's RetryAfter is the rule's whole window, which
	// would send a client that honours it away for an hour over a blip.
	return verdict{outcome: outcomeStoreError, retry: 1}
}

// fallbackBurst returns the most a request may cost on the group's local
// fallback, in a client's bucket or the shared one; 0 without one.
func (g *group) fallbackBurst() int {
	if e, ok := g.engine.(*shared); ok && e.fallback != nil {
		return min(e.fallback.budget.Burst, e.fallback.budget.SharedBurst)
	}
	return 0
}

// decideLocally decides a request that holds the group's slots by the
// fallback's buckets: it gives back what the request holds on the store's
// side (a charge-on-failure hold) and spends, or holds, its cost there
// instead. A refusal frees the slots.
func (e *shared) decideLocally(ctx context.Context, t *ticket, now int64) verdict {
	if t.held {
		e.unhold(t)
	}
	ft := ticket{key: t.key, shard: t.shard, cost: t.cost, slot: -1}
	v := e.fallback.engine.admit(ctx, &ft, e.fallbackNow(now))
	if !v.admitted || !ft.taken {
		e.release(t)
		return v // refused, or in shadow mode admitted without taking anything
	}
	t.fallback, t.slot, t.held = true, ft.slot, ft.held
	v.outcome = outcomeFallback
	return v
}

// local returns the fallback's ticket of a request it admitted.
func (t ticket) local() ticket {
	return ticket{key: t.key, shard: t.shard, cost: t.cost, taken: true, held: t.held, slot: t.slot}
}

// subject returns the store's subject for a key: the hex of a hashed key's
// bytes, which is quota.Subject of the value it hashes, or quota.Subject of
// a client key, so the store never sees a raw value. In a group keyed by a
// value, a request without one is keyed by its client under another
// prefix: the value "192.0.2.7/32" hashes as the client 192.0.2.7's text
// does, and a client that chooses its value must not name another's
// budget.
func (e *shared) subject(key netip.Prefix) string {
	if key.Bits() == 0 { // a hash (hashKey), never a client's address
		return keyText(key)
	}
	if k := e.g.keyKind; k == keyHeader || k == keyPath || k == keyFunc {
		return quota.Subject(valueGroupClient + key.String())
	}
	return quota.Subject(key.String())
}

// valueGroupClient starts the text a group keyed by a value hashes for a
// request keyed by its client instead.
const valueGroupClient = "client "

// release gives back the slots, and the held tokens, of a request the
// store refused or that has ended.
func (e *shared) release(t *ticket) {
	s := &e.g.shards[t.shard]
	s.mu.Lock()
	if t.fallback {
		t.slot, t.held = -1, false // they were the fallback's, given back by now
	}
	if t.held && t.taken {
		e.unholdLocked(s, t)
	}
	e.g.releaseLocked(s, t)
	s.mu.Unlock()
}

// unhold gives back the tokens a charge-on-failure request holds against
// the store, keeping its slots.
func (e *shared) unhold(t *ticket) {
	s := &e.g.shards[t.shard]
	s.mu.Lock()
	e.unholdLocked(s, t)
	s.mu.Unlock()
}

func (e *shared) unholdLocked(s *shard, t *ticket) {
	if n := s.held[t.key] - t.cost; n > 0 {
		s.held[t.key] = n
	} else {
		delete(s.held, t.key)
	}
	t.held = false
}

// cancel frees the slots of a request a later limit refused and gives back
// the cost it spent on the store (none when the store failed and its policy
// admitted the request, nor while the store is down, which would make the
// request wait for its timeout), under a context that outlives the request's
// cancellation. A failed refund is logged: the cost stays spent.
func (e *shared) cancel(ctx context.Context, t *ticket) {
	if t.fallback {
		lt := t.local()
		e.fallback.engine.cancel(ctx, &lt)
		e.release(t)
		return
	}
	if !t.held && !t.uncounted && !e.down.Down() {
		if err := e.g.budget.Store.Refund(context.WithoutCancel(ctx), e.rule, e.subject(t.key), int(t.cost)); err != nil {
			e.logs.Do(func() {
				e.g.set.logger.Warn("admit: shared store failed to refund a request another limit refused", "group", e.g.name, "err", err)
			})
		}
	}
	e.release(t)
}

// settle charges the store for a charge-on-failure request answered 4xx
// (unless the store is down: the charge would wait for its timeout), then
// frees the slots: the slot counts toward the client's held tokens, so a
// request arriving meanwhile cannot pass on the token this one is about to
// spend. The charge runs under a context that outlives the request's
// cancellation.
func (e *shared) settle(ctx context.Context, t *ticket, status int) {
	if t.fallback {
		lt := t.local()
		e.fallback.engine.settle(ctx, &lt, status)
		e.release(t)
		return
	}
	if t.held && status >= 400 && status < 500 && !e.down.Down() {
		g := e.g
		_, err := g.budget.Store.AllowN(context.WithoutCancel(ctx), e.rule, e.subject(t.key), int(t.cost))
		if err != nil {
			e.logs.Do(func() {
				g.set.logger.Warn("admit: shared store failed to charge a failed request", "group", g.name, "err", err)
			})
		}
	}
	e.release(t)
}

// toFull estimates how long the store's bucket takes to fill again from what
// the decision says is left.
func (e *shared) toFull(dec quota.Decision) time.Duration {
	missing := e.g.budget.Burst - dec.Remaining
	if missing <= 0 {
		return 0
	}
	return time.Duration(float64(missing) / float64(e.g.budget.Rate) * float64(time.Second))
}

// ceilSeconds rounds d up to whole seconds, at least 1.
func ceilSeconds(d time.Duration) int {
	s := math.Ceil(d.Seconds())
	if s > math.MaxInt32 {
		return math.MaxInt32
	}
	return max(1, int(s))
}

// decidesOnStore reports whether the group's tokens are counted on its
// store. An infinite token-bucket rate counts nothing, so such a group is
// decided by the door's own always-full buckets, under the same caps: a
// store's token-bucket rule cannot say "no limit", and the calls it decides at one
// time (a batch) would pass only up to the burst.
func (b Budget) decidesOnStore() bool {
	return b.Store != nil && !(b.Algorithm == TokenBucket && b.Rate == rate.Inf)
}

// rule returns the rule a shared store enforces for the group: a fixed
// window's Limit per Window, or a token bucket with Rate as Limit per
// Window with Limit a whole number of tokens.
func (b Budget) rule(g Group) quota.Rule {
	r := quota.Rule{Name: "admit." + string(g), Algorithm: algorithm.Quota(b.Algorithm)}
	if b.Algorithm == FixedWindow {
		r.Limit, r.Window = b.Limit, b.Window
		return r
	}
	r.Limit = max(1, int(math.Round(float64(b.Rate))))
	r.Window = time.Duration(float64(r.Limit) / float64(b.Rate) * float64(time.Second))
	if b.Rate == rate.Inf {
		r.Limit, r.Window = math.MaxInt32, time.Second
	}
	r.Burst = b.Burst
	return r
}
