package admit

import (
	"context"
	"math"
	"net/netip"
	"sync"

	"github.com/admitgo/admit/internal/lru"
)

// local is the engine of a group without a shared store: each client's
// bucket lives in its shard's table, and clients that find no room spend
// from the group's shared bucket under the same caps. The shared bucket has
// its own mutex, always taken after a shard's.
type local struct {
	g              *group
	client, shared refill
	queue          float64 // the tokens a client's bucket may owe to requests waiting (Budget.Queue)

	mu         sync.Mutex // guards bucket and sharedHeld
	bucket     bucket     // the shared bucket
	sharedHeld int32      // tokens held on the shared bucket by unsettled requests
}

func newLocal(g *group, now int64) *local {
	l := &local{g: g, queue: float64(g.budget.Queue)}
	l.client, l.shared = g.budget.refills()
	l.bucket = l.shared.full(now)
	return l
}

// admit checks, under the client's shard lock, the client cap and its
// bucket (its table entry, claimed if need be, or the shared bucket), then
// takes the group slot and spends or holds the tokens. In shadow mode a
// request that would be refused is admitted without taking anything.
func (l *local) admit(_ context.Context, t *ticket, now int64) verdict {
	if t.reserved {
		return l.admitReserved(t, now)
	}
	g := l.g
	s := &g.shards[t.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, prior := s.inflightLocked(t.key)
	if int(prior) >= g.budget.PerClient {
		return g.refusal(outcomeClientConcurrency, 1)
	}
	var evicted bool
	if slot < 0 {
		slot, evicted = l.claimLocked(s, t.key, now)
	}
	t.slot = slot
	v := l.spendLocked(s, t, now)
	v.evicted = evicted
	if !v.admitted || v.outcome != outcomeOK && v.outcome != outcomeWouldDelayed {
		return v // refused, waiting for its token, or admitted in shadow mode without taking anything
	}
	if slot >= 0 {
		s.table.At(slot).inflight++
	} else {
		s.perClient[t.key] = prior + 1
	}
	t.taken = true
	return v
}

// bucketLocked returns the bucket of a request's ticket, how it fills and
// the tokens its unsettled requests hold. For the shared bucket it takes
// l.mu and reports it, for the caller to unlock. The caller holds the
// shard's lock.
func (l *local) bucketLocked(s *shard, t *ticket) (b *bucket, f refill, held *int32, shared bool) {
	if t.slot >= 0 {
		e := s.table.At(t.slot)
		return &e.bucket, l.client, &e.held, false
	}
	l.mu.Lock()
	return &l.bucket, l.shared, &l.sharedHeld, true
}

// spendLocked checks the tokens of the client's bucket (its table entry at
// t.slot, or the shared bucket) and, when they suffice and a group slot is
// free, takes the slot and spends (or holds) t.cost tokens. When they do
// not, a client's bucket with a Queue reserves them for the request to
// wait for (see reserveLocked). A fixed window counts a request it
// refuses too, unless the group charges on failure. The caller holds the
// shard's lock.
func (l *local) spendLocked(s *shard, t *ticket, now int64) verdict {
	g := l.g
	b, f, held, shared := l.bucketLocked(s, t)
	if shared {
		defer l.mu.Unlock()
	}
	onFailure := g.budget.Charge == ChargeOnFailure
	cost := float64(t.cost)
	need := cost
	if onFailure && !f.unlimited() {
		need += float64(*held)
	}
	avail := b.available(now, f)
	o := outcomeOK
	if avail < need {
		var queue float64 // 0 unless the request may wait: the shared bucket is everyone's, and never owes
		if !shared {
			queue = l.queue
		}
		queued := avail >= need-queue
		switch {
		case queued && g.set.shadow:
			o = outcomeWouldDelayed // shadow mode never delays: admitted now, spending what it would reserve
		case queued && takeUpTo(&g.waiting, int64(g.budget.MaxWaiting)):
			return reserveLocked(b, f, t, avail, now)
		default:
			// Retry-After: when a retry is let into the queue, or, with
			// no queue or the group's waiting at its bound, when the
			// token is there.
			until := need
			if !queued {
				until -= queue
			}
			v := g.refusal(outcomeRateLimited, b.secondsUntil(now, until, f))
			if f.fixed && !onFailure && !g.set.shadow {
				b.spend(now, cost, f)
			}
			v.reset = v.retry // on a refusal, RateLimit's t is Retry-After
			return v
		}
	}
	if !g.takeSlotFor(t) {
		return g.refusal(outcomeGroupConcurrency, 1)
	}
	if onFailure {
		*held += t.cost
		t.held = true
	} else {
		b.spend(now, cost, f)
	}
	v := verdict{admitted: true, outcome: o}
	if g.fields.admitted {
		v.left = max(0, int(math.Floor(avail-need))) // 0 for a shadow request that would have waited
		if onFailure {
			v.reset = f.seconds(f.burst - avail + need)
		} else {
			v.reset = b.secondsToFull(now, f)
		}
	}
	return v
}

// claimLocked finds a slot for a client its shard's table does not hold. On a
// full table it probes the oldest entries: each that cannot be reclaimed
// moves to the front, and the first that is full and idle is given to the
// newcomer with a full bucket. It returns -1 when none qualifies. The
// newcomer's requests in flight on the shared bucket, if any, are counted on
// its entry from then on. The caller holds s.mu.
func (l *local) claimLocked(s *shard, key netip.Prefix, now int64) (slot int32, evicted bool) {
	slot = -1
	if !s.table.Full() {
		slot = s.table.Insert(key, entry{bucket: l.client.full(now)})
	} else if i := s.table.Victim(lru.Probes, func(e *entry) uint64 {
		if e.inflight == 0 && e.bucket.isFull(now, l.client) {
			return 0
		}
		return lru.Keep
	}); i >= 0 {
		s.table.Replace(i, key, entry{bucket: l.client.full(now)})
		slot, evicted = i, true
	}
	if n, ok := s.perClient[key]; ok && slot >= 0 {
		s.table.At(slot).inflight = n
		delete(s.perClient, key)
	}
	return slot, evicted
}

// cancel frees the request's slots and gives back what admission spent or
// held, as if it had never come.
func (l *local) cancel(_ context.Context, t *ticket) {
	s := &l.g.shards[t.shard]
	s.mu.Lock()
	l.g.releaseLocked(s, t)
	if t.reserved {
		l.unreserveLocked(s, t)
		s.mu.Unlock()
		return
	}
	b, f, held, shared := l.bucketLocked(s, t)
	if t.held {
		*held -= t.cost
	} else {
		b.refund(l.g.set.now(), float64(t.cost), f)
	}
	if shared {
		l.mu.Unlock()
	}
	s.mu.Unlock()
}

// settle frees the request's slots and, for a request holding tokens,
// spends them when the answer was a 4xx. It reads the clock only to spend.
func (l *local) settle(_ context.Context, t *ticket, status int) {
	s := &l.g.shards[t.shard]
	s.mu.Lock()
	l.g.releaseLocked(s, t)
	if t.held {
		b, f, held, shared := l.bucketLocked(s, t)
		*held -= t.cost
		if status >= 400 && status < 500 {
			b.spend(l.g.set.now(), float64(t.cost), f)
		}
		if shared {
			l.mu.Unlock()
		}
	}
	s.mu.Unlock()
}
