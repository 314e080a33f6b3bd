package admit

import (
	"context"
	"math"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/quota"
)

// storeState throttles the logging of a group's store failures: an outage
// must not turn into a log line per request.
type storeState struct {
	logs rate.Sometimes
}

// decideShared asks the group's shared store for the token decision of a
// request that has taken its in-flight slots. Always-charge groups spend a
// token there; charge-on-failure groups look without spending and need a
// token for each of the client's requests this process has in flight. A
// refusal gives the slots back.
func (h *handler) decideShared(r *http.Request, t *ticket) verdict {
	d, g := h.door, h.group
	cost := 1
	if g.budget.ChargeOnFailure {
		cost = 0
	}
	dec, err := g.budget.Store.AllowN(r.Context(), g.rule, quota.Subject(t.key.String()), cost)
	if err != nil {
		g.store.logs.Do(func() {
			d.logger.Warn("admit: shared store failed; its failure policy decides", "group", g.name, "allowed", dec.Allowed, "err", err)
		})
		if dec.Allowed {
			return verdict{outcome: OutcomeStoreError}
		}
		g.release(t)
		if d.disabled {
			return verdict{outcome: OutcomeStoreError}
		}
		return verdict{outcome: OutcomeStoreError, retry: ceilSeconds(dec.RetryAfter)}
	}
	allowed := dec.Allowed
	if cost == 0 {
		allowed = allowed && dec.Remaining >= 1+int(t.prior)
	}
	if !allowed {
		g.release(t)
		retry := ceilSeconds(dec.RetryAfter)
		if d.disabled {
			return verdict{outcome: OutcomeWouldRateLimited}
		}
		return verdict{outcome: OutcomeRateLimited, retry: retry, reset: ceilSeconds(h.toFull(dec))}
	}
	t.storeHeld = g.budget.ChargeOnFailure
	left := dec.Remaining - int(t.prior)
	return verdict{left: left, reset: ceilSeconds(h.toFull(dec))}
}

// chargeShared spends the token a charge-on-failure request held once its
// handler answered 4xx. It runs after the slots are freed, under a context
// that outlives the request's cancellation.
func (h *handler) chargeShared(r *http.Request, t *ticket) {
	d, g := h.door, h.group
	_, err := g.budget.Store.AllowN(context.WithoutCancel(r.Context()), g.rule, quota.Subject(t.key.String()), 1)
	if err != nil {
		g.store.logs.Do(func() {
			d.logger.Warn("admit: shared store failed to charge a failed request", "group", g.name, "err", err)
		})
	}
}

// toFull estimates how long the store's bucket takes to fill again from what
// the decision says is left.
func (h *handler) toFull(dec quota.Decision) time.Duration {
	missing := h.group.budget.Burst - dec.Remaining
	if missing <= 0 {
		return 0
	}
	return time.Duration(float64(missing) / float64(h.group.budget.Rate) * float64(time.Second))
}

// ceilSeconds rounds d up to whole seconds, at least 1.
func ceilSeconds(d time.Duration) int {
	s := math.Ceil(d.Seconds())
	if s > math.MaxInt32 {
		return math.MaxInt32
	}
	return max(1, int(s))
}
