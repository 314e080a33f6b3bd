package asyncquota

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// shardCount is how many locks the tracked keys are split over, so that
// parallel decisions on different keys rarely wait for each other.
const shardCount = 16

// evictProbe is how many entries a full shard looks at for one it may
// forget.
const evictProbe = 8

// key is one bucket: a rule's name and algorithm, and a subject.
type key struct {
	name    string
	subject string
	alg     quota.Algorithm
}

// entry is what a replica knows of one bucket: the store's state as of the
// last reconcile, with the hits this replica admitted since laid on top.
// Its shard's lock guards every field but key and shard.
type entry struct {
	key
	shard int

	rule quota.Rule // the latest call's
	// loaded is set once a reconcile has brought the store's state; until
	// then the store decides the bucket's calls.
	loaded bool
	// dirty is set while the entry is on its shard's list for the next
	// reconcile.
	dirty bool
	// pending is the cost admitted here since the last reconcile took its
	// snapshot; sent is the cost of the reconcile in flight.
	pending, sent int64
	// deciding is the cost of the calls the store is deciding for this
	// bucket, and late the cost of those it admitted since the snapshot:
	// the reconcile's read may have missed either, so the load lays them
	// on top of what it read. Counting one twice only refuses earlier.
	deciding, late int64
	// loads counts the reconciles that loaded the bucket, so that a call
	// the store decided across one knows the load counted it.
	loads int

	// FixedWindow: the window counted and its count as this replica knows
	// it, this replica's admissions included.
	ws    time.Time
	count int64
	// GCRA: the theoretical arrival time as this replica knows it; the zero
	// time for a full bucket.
	tat time.Time
}

// decide decides a call of cost n at now, on the store's clock, from what
// the entry knows, and lays an admitted call's cost on top. Only admitted
// calls are counted: the store adds them at the next reconcile.
func (e *entry) decide(rule quota.Rule, now time.Time, n int) quota.Decision {
	e.rule = rule
	if rule.Algorithm == quota.TokenBucket {
		d, tat := store.GCRADecision(rule, now, e.tat, n)
		if d.Allowed && n > 0 {
			e.tat, e.pending = tat, e.pending+int64(n)
		}
		return d
	}
	if ws := store.WindowStart(now, rule.Window); ws.After(e.ws) {
		// A new window: what was admitted in the last one no longer
		// matters to any decision, so it is not sent.
		e.ws, e.count, e.pending = ws, 0, 0
	}
	count := e.count + int64(n)
	d := store.FixedWindowDecision(rule, now, count, n)
	if d.Allowed && n > 0 {
		e.count, e.pending = count, e.pending+int64(n)
	}
	return d
}

// admittedByStore lays on a loaded entry the cost of a call the store
// admitted while reconciles failed, which the store counted and this
// replica must not forget.
func (e *entry) admittedByStore(now time.Time, n int) {
	if !e.loaded || n == 0 {
		return
	}
	if e.rule.Algorithm == quota.TokenBucket {
		e.tat = store.AddGCRA(e.rule, now, e.tat, n)
	} else if ws := store.WindowStart(now, e.rule.Window); !ws.After(e.ws) {
		e.count += int64(n)
	}
}

// refund gives back n of the cost admitted here and not yet sent, and
// reports whether there was that much.
func (e *entry) refund(n int) bool {
	if !e.loaded || e.pending < int64(n) {
		return false
	}
	e.pending -= int64(n)
	if e.rule.Algorithm == quota.TokenBucket {
		e.tat = e.tat.Add(-store.Interval(e.rule) * time.Duration(n))
	} else {
		e.count = max(0, e.count-int64(n))
	}
	return true
}

// apply takes the store's state from a reconcile's tally, which holds the
// cost that was sent, and lays what was admitted since on top. A replica
// never forgets its own admissions: it keeps the larger of what it knew and
// what the store says.
func (e *entry) apply(t *quota.Tally) {
	e.sent = 0
	extra := e.pending
	if !e.loaded {
		extra = e.deciding + e.late
		e.loads++
	}
	if e.rule.Algorithm == quota.TokenBucket {
		tat := store.AddGCRA(e.rule, t.Now, t.TAT, int(extra))
		if !e.loaded || tat.After(e.tat) {
			e.tat = tat
		}
		e.loaded = true
		return
	}
	switch ws := store.WindowStart(t.Now, e.rule.Window); {
	case !e.loaded:
		e.ws, e.count = ws, t.Count+extra
	case ws.After(e.ws):
		e.ws, e.count, e.pending = ws, t.Count, 0
	case ws.Equal(e.ws):
		e.count = max(e.count, t.Count+e.pending)
	}
	// Otherwise this replica has moved on to a later window than the
	// store's reply: it keeps counting there.
	e.loaded = true
}

// idle reports whether the entry may be forgotten without losing a hit.
func (e *entry) idle() bool { return !e.dirty && e.pending == 0 && e.sent == 0 && e.deciding == 0 }

// shard is one lock's share of the tracked keys.
type shard struct {
	mu      sync.Mutex // guards entries and dirty
	entries map[key]*entry
	dirty   []*entry // entries touched since the last reconcile's snapshot

	// decisions counts decisions by mode and outcome, read when metrics
	// are collected.
	decisions [modes][len(outcomes)]atomic.Int64
}

// touchLocked puts e on the list for the next reconcile.
func (s *shard) touchLocked(e *entry) {
	if !e.dirty {
		e.dirty = true
		s.dirty = append(s.dirty, e)
	}
}

// evictLocked forgets one idle entry among the first evictProbe the map
// yields, in Go's random map order, and reports whether it found one.
func (s *shard) evictLocked() bool {
	probed := 0
	for k, e := range s.entries {
		if e.idle() {
			delete(s.entries, k)
			return true
		}
		if probed++; probed == evictProbe {
			break
		}
	}
	return false
}
