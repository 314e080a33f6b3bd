package memquota

import (
	"time"

	"github.com/admitgo/admit/quota"
)

// bucketKey identifies one bucket: a rule's name and algorithm, and a
// subject; an overflow bucket has no subject. A fixed-window rule and a
// GCRA rule of the same name count apart.
type bucketKey struct {
	name    string
	subject string
	alg     quota.Algorithm
}

// bucket is one subject's state under one rule.
type bucket struct {
	// FixedWindow: the window counted and its count.
	start time.Time
	count int64
	// GCRA: the theoretical arrival time, and the time one call holds.
	tat      time.Time
	interval time.Duration

	// limit is how many calls the bucket holds before it refuses: the
	// rule's limit, or its burst for GCRA.
	limit uint64
	// expires is when the bucket decides like one never seen, so it can be
	// dropped without changing any decision.
	expires time.Time
}

// cost ranks b for eviction at now (see cost): by the calls its window
// counted, or the calls its GCRA bucket holds, rounded up.
func (b *bucket) cost(now time.Time) uint64 {
	if !now.Before(b.expires) {
		return 0
	}
	used := uint64(max(b.count, 0))
	if b.interval > 0 {
		used = uint64((b.tat.Sub(now) + b.interval - 1) / b.interval)
	}
	return cost(true, used, b.limit)
}
