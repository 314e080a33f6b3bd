package admit

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"

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
}

func newShared(g *group) *shared {
	return &shared{g: g, rule: g.budget.rule(g.name), logs: rate.Sometimes{Interval: 10 * time.Second}}
}

// admit takes the client's and the group's slots, then asks the store.
// Always-charge groups spend a token there; charge-on-failure groups look
// without spending and need a token for each of the client's requests this
// process has in flight. A refusal gives the slots back.
func (e *shared) admit(ctx context.Context, t ticket, _ int64) (_ ticket, v verdict) {
	g := e.g
	s := &g.shards[t.shard]
	s.mu.Lock()
	prior := s.perClient[t.key]
	switch {
	case int(prior) >= g.budget.PerClient:
		s.mu.Unlock()
		return t, g.refuse(outcomeClientConcurrency, 1)
	case !g.takeSlot():
		s.mu.Unlock()
		return t, g.refuse(outcomeGroupConcurrency, 1)
	}
	s.perClient[t.key] = prior + 1
	t.taken, t.prior = true, prior
	s.mu.Unlock()
	decided := false
	defer func() {
		if !decided { // the store panicked: free the slots and let it unwind
			e.release(&t)
		}
	}()

	onFailure := g.budget.Charge == ChargeOnFailure
	cost := 1
	if onFailure {
		cost = 0
	}
	dec, err := g.budget.Store.AllowN(ctx, e.rule, quota.Subject(t.key.String()), cost)
	if err != nil {
		e.logs.Do(func() {
			g.set.logger.Warn("admit: shared store failed; its failure policy decides", "group", g.name, "allowed", dec.Allowed, "err", err)
		})
		decided = true
		if dec.Allowed {
			return t, verdict{admitted: true, outcome: outcomeStoreError}
		}
		e.release(&t)
		if g.set.shadow {
			return t, verdict{admitted: true, outcome: outcomeStoreError}
		}
		return t, verdict{outcome: outcomeStoreError, retry: ceilSeconds(dec.RetryAfter)}
	}
	decided = true
	allowed := dec.Allowed
	if onFailure {
		allowed = allowed && dec.Remaining >= 1+int(prior)
	}
	if !allowed {
		e.release(&t)
		v = g.refuse(outcomeRateLimited, ceilSeconds(dec.RetryAfter))
		v.reset = ceilSeconds(e.toFull(dec))
		return t, v
	}
	t.held = onFailure
	return t, verdict{admitted: true, left: dec.Remaining - int(prior), reset: ceilSeconds(e.toFull(dec))}
}

// release gives back the slots of a request the store refused.
func (e *shared) release(t *ticket) {
	s := &e.g.shards[t.shard]
	s.mu.Lock()
	e.g.releaseLocked(s, t)
	s.mu.Unlock()
}

// settle charges the store for a charge-on-failure request answered 4xx, then
// frees the slots: the slot counts toward the client's held tokens, so a
// request arriving meanwhile cannot pass on the token this one is about to
// spend. The charge runs under a context that outlives the request's
// cancellation.
func (e *shared) settle(ctx context.Context, t ticket, status int) {
	if t.held && status >= 400 && status < 500 {
		g := e.g
		_, err := g.budget.Store.AllowN(context.WithoutCancel(ctx), e.rule, quota.Subject(t.key.String()), 1)
		if err != nil {
			e.logs.Do(func() {
				g.set.logger.Warn("admit: shared store failed to charge a failed request", "group", g.name, "err", err)
			})
		}
	}
	e.release(&t)
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
