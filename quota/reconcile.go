package quota

import (
	"context"
	"time"
)

// Tally is one bucket's part of a reconcile: the calls a replica admitted
// on its own since it last reconciled, which the store adds to the bucket
// without deciding them, and the bucket's state afterwards, which the store
// fills in. quota/asyncquota sends them; store authors implement
// [Reconciler].
type Tally struct {
	Rule    Rule
	Subject string
	// Hits is the cost of the calls admitted since the last reconcile, 0 or
	// more; 0 reads the bucket and changes nothing. A fixed window adds it
	// to the window that holds Now; a token bucket moves its theoretical
	// arrival time to max(tat, Now) + Hits x interval, past the burst if it
	// must, so that calls admitted beyond the limit are paid back before
	// more pass.
	Hits int

	// Now is the store's time when it counted; the store sets it.
	Now time.Time
	// Count is, for a fixed window, the count of the window that holds Now
	// after the hits; the store sets it.
	Count int64
	// TAT is, for a token bucket, the theoretical arrival time after the hits, the
	// zero time for a bucket the store does not hold (a full one); the
	// store sets it.
	TAT time.Time
}

// Reconciler is a [Charger] that can also add many buckets' hits at once
// and report their state, in one round trip per batch, so that replicas
// deciding on their own (quota/asyncquota) can share what they admitted.
type Reconciler interface {
	Charger
	// Reconcile adds each tally's hits to its bucket and sets its Now,
	// Count and TAT. The buckets must be distinct (rule name, algorithm and
	// subject). A caller error (an invalid rule, a negative Hits, a subject
	// that did not come from [Subject]) is returned before anything is
	// counted; a store error leaves it unknown which hits were added, and
	// the store never retries them.
	Reconcile(ctx context.Context, tallies []Tally) error
}
