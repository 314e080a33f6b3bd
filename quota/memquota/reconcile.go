package memquota

import (
	"context"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

var _ quota.Reconciler = (*Memory)(nil)

// Reconcile adds each tally's hits to its bucket without deciding them and
// reports the bucket's state (see [quota.Reconciler]), so that tests of
// replicas deciding on their own can run without a server. The only errors
// are caller errors, returned before anything is counted.
func (m *Memory) Reconcile(ctx context.Context, tallies []quota.Tally) error {
	if err := store.CheckTallies(tallies, store.Check); err != nil {
		return err
	}
	now := m.now()
	evicted := 0
	m.mu.Lock()
	for i := range tallies {
		if m.reconcileLocked(&tallies[i], now) {
			evicted++
		}
	}
	m.mu.Unlock()
	if evicted > 0 {
		m.evictions.Add(ctx, int64(evicted), m.evictOpts...)
	}
	return nil
}

// reconcileLocked adds t's hits at now and sets its state; evicted reports
// whether a live bucket was forgotten to make room.
func (m *Memory) reconcileLocked(t *quota.Tally, now time.Time) (evicted bool) {
	t.Now, t.Count, t.TAT = now, 0, time.Time{}
	key := bucketKey{name: t.Rule.Name, subject: t.Subject, alg: t.Rule.Algorithm}
	b := m.buckets.get(key)
	if t.Rule.Algorithm == quota.GCRA {
		if b != nil && b.tat.After(now) {
			t.TAT = b.tat
		}
		if t.Hits == 0 {
			return false
		}
		t.TAT = store.AddGCRA(t.Rule, now, t.TAT, t.Hits)
		if b == nil {
			b, evicted = m.addLocked(key, now)
		}
		b.tat, b.expires = t.TAT, t.TAT
		return evicted
	}
	ws := store.WindowStart(now, t.Rule.Window)
	if b != nil && !b.start.Before(ws) {
		ws, t.Count = b.start, b.count
	}
	if t.Hits == 0 {
		return false
	}
	t.Count += int64(t.Hits)
	if b == nil {
		b, evicted = m.addLocked(key, now)
	}
	b.start, b.count, b.expires = ws, t.Count, ws.Add(t.Rule.Window)
	return evicted
}
