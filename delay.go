package admit

import (
	"context"
	"math"
	"net/http"
	"time"
)

// validateDelay names what keeps a budget's Queue and MaxWaiting from
// making a delay mode: a queue reserves a token ahead, which a fixed
// window, a charge taken only after the answer, and a shared store's
// calls cannot express.
func (b Budget) validateDelay(g Group) error {
	switch {
	case b.Queue < 0:
		return fieldsError(g, "{Queue} %d, want 0 or more (0: none)", b.Queue)
	case b.MaxWaiting < 0 || b.MaxWaiting > math.MaxInt32:
		return fieldsError(g, "{MaxWaiting} %d, want 1 to 2^31-1 (0: the group's {Inflight})", b.MaxWaiting)
	case b.MaxWaiting > 0 && b.Queue == 0:
		return fieldsError(g, "{MaxWaiting} %d applies to a group with a {Queue}", b.MaxWaiting)
	case b.Queue == 0:
		return nil
	case b.Algorithm == FixedWindow:
		return fieldsError(g, "{Queue} %d needs a token bucket: a fixed window has no token to wait for, only the next window", b.Queue)
	case b.Charge != ChargeAlways:
		return fieldsError(g, "{Queue} %d needs {Charge} {ChargeAlways}: a group that charges on failure spends its token only once the answer is a 4xx, so there is none to reserve ahead", b.Queue)
	case b.Store != nil:
		return fieldsError(g, "{Queue} %d cannot be kept on a shared store ({Store}): a store's call spends a token or refuses, and cannot reserve one ahead for a request that waits", b.Queue)
	}
	return nil
}

// statusClientGone is the status a request whose context ended while it
// waited is told with, nginx's "client closed request": nothing is
// written, since nobody reads it.
const statusClientGone = 499

// reserveLocked spends t.cost from a client's bucket that lacks it, into
// its debt, for the request to wait until the bucket has refilled to
// where the tokens were there, as x/time/rate's Reserve does; the caller
// counted the request as waiting. The caller holds the shard's lock.
func reserveLocked(b *bucket, f refill, t *ticket, avail float64, now int64) verdict {
	cost := float64(t.cost)
	b.spend(now, cost, f)
	t.reserved = true
	return verdict{outcome: outcomeDelayed, wait: int64(math.Ceil((cost - avail) / f.perNano))}
}

// admitReserved takes the slots of a request that has waited for the
// tokens it reserved: it spends nothing, and only the caps refuse it.
// Its key's entry is looked up again: one whose debt was repaid long
// since may have been taken over, and the request then counts as a
// client without one.
func (l *local) admitReserved(t *ticket, now int64) verdict {
	g := l.g
	s := &g.shards[t.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, prior := s.inflightLocked(t.key)
	if int(prior) >= g.budget.PerClient {
		return g.refusal(outcomeClientConcurrency, 1)
	}
	if !g.takeSlotFor(t) {
		return g.refusal(outcomeGroupConcurrency, 1)
	}
	v := verdict{admitted: true, outcome: outcomeDelayed}
	if slot >= 0 {
		e := s.table.At(slot)
		e.inflight++
		if g.fields.admitted {
			v.left, v.reset = int(max(0, math.Floor(e.bucket.available(now, l.client)))), e.bucket.secondsToFull(now, l.client)
		}
	} else {
		s.perClient[t.key] = prior + 1
	}
	t.slot, t.taken = slot, true
	return v
}

// unreserveLocked gives the tokens a request reserved back to its key's
// entry, if the key still has one: an entry taken over was full, owing
// nothing. The caller holds the shard's lock.
func (l *local) unreserveLocked(s *shard, t *ticket) {
	t.reserved = false
	if slot, ok := s.table.Peek(t.key); ok {
		s.table.At(slot).bucket.refund(l.g.set.now(), float64(t.cost), l.client)
	}
}

// unreserve gives back the tokens of a request that reserved them and
// holds no slot: it was refused once it had waited, or its context ended
// first. Only the local engine reserves (validateDelay).
func (g *group) unreserve(t *ticket) {
	l := g.engine.(*local)
	s := &g.shards[t.shard]
	s.mu.Lock()
	l.unreserveLocked(s, t)
	s.mu.Unlock()
}

// waitFor holds a request whose i-th limit reserved its tokens until they
// are there, the limits before it having let go of theirs (letGo), and
// reports whether they are. When the request's context ends first, its
// admission is undone and the limit's verdict says delay_abandoned.
func (h *handler) waitFor(ctx context.Context, r *http.Request, i int, wait int64, p *pass) bool {
	h.letGo(ctx, p.tickets[:i])
	if h.await(ctx, r, h.limits[i], wait, p) {
		return true
	}
	h.undo(ctx, p.tickets, i)
	p.verdicts[i].outcome = outcomeDelayAbandoned
	return false
}

// abandoned counts a request whose context ended while it waited for
// limit g's tokens, given back by now, and writes nothing: nobody reads it.
func (h *handler) abandoned(r *http.Request, g *group, t *ticket) {
	g.count(t, outcomeDelayAbandoned)
	h.tell(r, g, outcomeDelayAbandoned, statusClientGone)
}

// await holds a request that limit g told to wait for the tokens it
// reserved, holding nothing else, until they are there or ctx ends; it
// reports whether they are.
// The wait is timed, and measured, by the runtime's timers and clock,
// which a synctest bubble fakes: a Config.Now that stands still (a test's)
// does not stop it.
func (h *handler) await(ctx context.Context, r *http.Request, g *group, wait int64, p *pass) bool {
	start := time.Now()
	timer := time.NewTimer(time.Duration(wait))
	var ok bool
	select {
	case <-timer.C:
		ok = true
	case <-ctx.Done():
		timer.Stop()
	}
	g.waiting.Add(-1)
	waited := time.Since(start)
	p.waited += waited
	if h.waited != nil {
		h.waited(r, g.name, waited)
	}
	return ok
}

// letGo undoes the admission of the limits before one that reserved its
// tokens, so that the request waits holding none of their slots: a limit
// that reserved on an earlier pass keeps its reservation, the others give
// back what they spent, and all are admitted again once the wait is over.
func (h *handler) letGo(ctx context.Context, tickets []ticket) {
	for i := len(tickets) - 1; i >= 0; i-- {
		t := &tickets[i]
		switch {
		case !t.taken:
		case t.reserved:
			g := h.limits[i]
			s := &g.shards[t.shard]
			s.mu.Lock()
			g.releaseLocked(s, t)
			s.mu.Unlock()
		default:
			h.limits[i].cancel(ctx, t)
		}
	}
}

// undo undoes a request's admission by the limits before the i-th, last
// first, and gives back the tokens reserved by any of its limits that
// holds no slot (a limit past i may have reserved on an earlier pass).
func (h *handler) undo(ctx context.Context, tickets []ticket, i int) {
	h.cancel(ctx, tickets[:i])
	if !h.delays {
		return
	}
	for j := range tickets {
		if t := &tickets[j]; t.reserved && !t.taken {
			h.limits[j].unreserve(t)
		}
	}
}
