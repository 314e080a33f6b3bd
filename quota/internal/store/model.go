package store

import (
	"time"

	"github.com/admitgo/admit/quota"
)

// Model is the smallest correct store for one bucket (one rule, one subject):
// it keeps a count for every fixed window and one theoretical arrival time,
// and decides with [FixedWindowDecision] and [GCRADecision]. Tests compare
// real stores with it. The zero Model is an empty bucket; it is not safe for
// concurrent use.
type Model struct {
	counts map[time.Time]int64 // fixed window: the count by window start
	// TAT is the GCRA bucket's theoretical arrival time, the zero time while
	// the bucket is new.
	TAT time.Time
}

// AllowN decides a call of cost n at now, as a store would.
func (m *Model) AllowN(rule quota.Rule, now time.Time, n int) quota.Decision {
	if rule.Algorithm == quota.TokenBucket {
		d, tat := GCRADecision(rule, now, m.TAT, n)
		m.TAT = tat
		return d
	}
	if m.counts == nil {
		m.counts = map[time.Time]int64{}
	}
	ws := WindowStart(now, rule.Window)
	m.counts[ws] += int64(n)
	return FixedWindowDecision(rule, now, m.counts[ws], n)
}
