package asyncquota

import (
	"context"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// chunk is how many buckets one round trip to the store carries at most:
// a flood that touches many buckets costs several round trips of bounded
// size rather than one unbounded statement or pipeline.
const chunk = 1000

// Run reconciles every interval until ctx ends, then once more, so that
// what this replica admitted last is not lost. A failed reconcile is
// counted in admit.quota.async.reconciles and tried again at the next tick.
func (c *Charger) Run(ctx context.Context) {
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			c.reconcileWithin(context.WithoutCancel(ctx))
			return
		case <-tick.C:
			c.reconcileWithin(ctx)
		}
	}
}

// reconcileWithin reconciles under a deadline of its own: an interval, and
// at least reconcileTimeout. A reconcile holds up no request, so it may
// take longer than a decision's timeout on a loaded store, which would
// otherwise fail it and send every call to the store.
func (c *Charger) reconcileWithin(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(c.interval, reconcileTimeout))
	defer cancel()
	_ = c.Reconcile(ctx)
}

// reconcileTimeout is the shortest deadline Run gives a reconcile.
const reconcileTimeout = time.Second

// Reconcile sends the cost this replica admitted on every bucket it
// touched since the last reconcile, and reads the state of every bucket it
// started tracking, in round trips of up to 1,000 buckets, and takes the
// buckets' shared state back; with nothing to send it does nothing. On a
// store error the hits of the round trip that failed and of those after it
// wait for the next reconcile (the store may then count the failed round
// trip's twice, which only refuses sooner), and until the store decides a
// call again every call goes to the store. Run calls it every interval; tests call it
// directly.
func (c *Charger) Reconcile(ctx context.Context) error {
	c.reconciling.Lock()
	defer c.reconciling.Unlock()
	c.snapshot()
	if len(c.tallies) == 0 {
		return nil
	}
	defer func() {
		clear(c.entries)
		c.entries, c.tallies = c.entries[:0], c.tallies[:0]
	}()
	var over int64
	for start := 0; start < len(c.tallies); start += chunk {
		end := min(start+chunk, len(c.tallies))
		sent := c.now()
		if err := c.store.Reconcile(ctx, c.tallies[start:end]); err != nil {
			c.failing.Store(true)
			c.failed(c.entries[start:end], c.entries[end:])
			c.metrics.reconciled(ctx, len(c.tallies), 0, true)
			return err
		}
		// The store's clock at the midpoint of the round trip.
		mid := sent.Add(c.now().Sub(sent) / 2)
		c.offset.Store(c.tallies[start].Now.UnixNano() - mid.UnixNano())
		over = max(over, c.apply(c.entries[start:end], c.tallies[start:end]))
	}
	c.metrics.reconciled(ctx, len(c.tallies), over, false)
	return nil
}

// snapshot moves every touched entry's pending cost to sent, and lists the
// entries and their tallies.
func (c *Charger) snapshot() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, e := range s.dirty {
			e.dirty = false
			e.sent, e.pending, e.late = e.pending, 0, 0
			c.entries = append(c.entries, e)
			c.tallies = append(c.tallies, quota.Tally{Rule: e.rule, Subject: e.subject, Hits: int(e.sent)})
		}
		clear(s.dirty)
		s.dirty = s.dirty[:0]
		s.mu.Unlock()
	}
}

// apply gives each entry its tally's state, and returns the most calls one
// bucket showed admitted beyond its limit.
func (c *Charger) apply(entries []*entry, tallies []quota.Tally) (over int64) {
	var s *shard
	for i, e := range entries {
		if next := &c.shards[e.shard]; next != s {
			if s != nil {
				s.mu.Unlock()
			}
			s = next
			s.mu.Lock()
		}
		e.apply(&tallies[i])
		over = max(over, overadmitted(&tallies[i]))
	}
	if s != nil {
		s.mu.Unlock()
	}
	return over
}

// overadmitted returns how many calls beyond the limit the store's state
// shows admitted: a fixed window's count past the limit (only admitted
// calls are counted), or how far a GCRA bucket's tat is past the burst, in
// calls of cost 1.
func overadmitted(t *quota.Tally) int64 {
	if t.Rule.Algorithm == quota.FixedWindow {
		return max(0, t.Count-int64(t.Rule.Limit))
	}
	if t.TAT.IsZero() {
		return 0
	}
	interval := store.Interval(t.Rule)
	past := t.TAT.Sub(t.Now) - interval*time.Duration(t.Rule.BurstOrLimit())
	return max(0, int64(past/interval))
}

// failed undoes the snapshot of a reconcile that failed: the hits of the
// round trip that failed, and of those not sent, are pending again. The
// store may have counted the failed round trip's already, and then counts
// them twice, which refuses sooner and never admits more; dropping them
// instead would let a store that fails every reconcile hide every
// replica's admissions from the others, past the bound.
func (c *Charger) failed(failed, unsent []*entry) {
	c.undo(failed, true)
	c.undo(unsent, true)
}

// undo puts entries back on the list for the next reconcile if they have
// something to send or to read, their sent hits pending again if keep.
func (c *Charger) undo(entries []*entry, keep bool) {
	for _, e := range entries {
		s := &c.shards[e.shard]
		s.mu.Lock()
		if keep {
			e.pending += e.sent
		}
		e.sent = 0
		if !e.loaded || e.pending > 0 {
			s.touchLocked(e)
		}
		s.mu.Unlock()
	}
}
