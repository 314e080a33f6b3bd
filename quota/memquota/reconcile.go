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
	var sum spots
	m.mu.Lock()
	for i := range tallies {
		count(&sum, m.reconcileLocked(&tallies[i], now))
	}
	m.mu.Unlock()
	m.record(ctx, sum)
	return nil
}

// reconcileLocked adds t's hits at now and sets its state, and returns
// where it found the bucket.
func (m *Memory) reconcileLocked(t *quota.Tally, now time.Time) spot[bucket] {
	t.Now, t.Count, t.TAT = now, 0, time.Time{}
	key := bucketKey{name: t.Rule.Name, subject: t.Subject, alg: t.Rule.Algorithm}
	s := m.findLocked(key, now)
	b := s.v
	if t.Rule.Algorithm == quota.TokenBucket {
		if b != nil && b.tat.After(now) {
			t.TAT = b.tat
		}
		if t.Hits == 0 {
			return spot[bucket]{}
		}
		t.TAT = store.AddGCRA(t.Rule, now, t.TAT, t.Hits)
		b = m.takeLocked(s, key, t.Rule)
		b.tat, b.expires = t.TAT, t.TAT
		return s
	}
	ws := store.WindowStart(now, t.Rule.Window)
	if b != nil && !b.start.Before(ws) {
		ws, t.Count = b.start, b.count
	}
	if t.Hits == 0 {
		return spot[bucket]{}
	}
	t.Count += int64(t.Hits)
	b = m.takeLocked(s, key, t.Rule)
	b.start, b.count, b.expires = ws, t.Count, ws.Add(t.Rule.Window)
	return s
}
