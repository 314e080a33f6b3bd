package pgquota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// A call is one decision of a batch.
type call struct {
	rule   quota.Rule
	bucket string
	n      int
	d      quota.Decision
	err    error
	// Batched calls only: the time the call must be answered by, and a
	// channel signalled once d and err are set.
	deadline time.Time
	done     chan struct{}
}

// Deadline, Expire and Signal let store.FlushDue answer a batched call.
func (c *call) Deadline() time.Time { return c.deadline }
func (c *call) Expire()             { c.err = context.DeadlineExceeded }
func (c *call) Signal()             { c.done <- struct{}{} }

// bucketCalls are the calls of one batch on one bucket, in arrival order.
type bucketCalls struct {
	bucket string
	alg    quota.Algorithm
	calls  []*call
	state  rowState
}

// decide decides calls in as few round trips as it can: one, unless a
// GCRA bucket has calls of different costs (see [split]). It sets every
// call's decision, or an error on every call it could not decide.
func (s *Store) decide(ctx context.Context, calls []*call) {
	for len(calls) > 0 {
		round, later := split(calls)
		if err := s.decideRound(ctx, round); err != nil {
			for _, c := range calls {
				c.d, c.err = quota.Decision{}, err
			}
			return
		}
		calls = later
	}
}

// split takes from calls a round that holds, for each GCRA bucket, only its
// first run of spending calls of one cost (and the looks up to where that
// run ends), and returns the rest for later rounds in arrival order. A
// round is one transaction; with one run per bucket its GCRA work is one
// statement that locks its rows in bucket order, so two batches cannot
// deadlock, as they could if each held rows of one statement while waiting
// for another's.
func split(calls []*call) (round, later []*call) {
	var cost map[string]int64    // a GCRA bucket's first spending cost in this round
	var deferred map[string]bool // GCRA buckets whose later calls wait for a later round
	for _, c := range calls {
		if c.rule.Algorithm != quota.TokenBucket {
			round = append(round, c)
			continue
		}
		if deferred[c.bucket] {
			later = append(later, c)
			continue
		}
		if c.n > 0 {
			if cost == nil {
				cost = make(map[string]int64)
			}
			k := int64(store.Interval(c.rule)) * int64(c.n)
			if first, ok := cost[c.bucket]; !ok {
				cost[c.bucket] = k
			} else if first != k {
				if deferred == nil {
					deferred = make(map[string]bool)
				}
				deferred[c.bucket] = true
				later = append(later, c)
				continue
			}
		}
		round = append(round, c)
	}
	return round, later
}

// decideRound decides calls in one round trip and one commit: one
// statement per kind of work (fixed-window counts, fixed-window looks, GCRA
// runs, GCRA looks), pipelined in one implicit transaction. The calls on
// one bucket are coalesced into one row update, and each call gets the
// decision it would have had alone, in arrival order: the row's state
// before the round follows from what the statements return, and the
// arithmetic replays the calls on it.
func (s *Store) decideRound(ctx context.Context, calls []*call) error {
	groups := group(calls)
	var clock any // NULL: the database's clock
	if s.clock != nil {
		clock = s.clock().UnixNano()
	}
	batch := &pgx.Batch{}
	var reads []func(pgx.BatchResults) error
	queue := func(list []*bucketCalls, sql string, args ...any) {
		if len(list) > 0 {
			batch.Queue(sql, append([]any{clock}, args...)...)
			reads = append(reads, func(br pgx.BatchResults) error { return readRows(br, list) })
		}
	}

	var fixed, fixedLooks, gcra, gcraLooks []*bucketCalls
	for _, g := range groups {
		spends := g.spends() > 0
		switch {
		case g.alg == quota.FixedWindow && spends:
			fixed = append(fixed, g)
		case g.alg == quota.FixedWindow:
			fixedLooks = append(fixedLooks, g)
		case spends:
			gcra = append(gcra, g)
		default:
			gcraLooks = append(gcraLooks, g)
		}
	}
	buckets, totals, windows := columns(fixed)
	queue(fixed, s.fixedSpendSQL, buckets, totals, windows)
	buckets, _, windows = columns(fixedLooks)
	queue(fixedLooks, s.fixedLookSQL, buckets, windows)
	buckets, sizes, costs, tols := runColumns(gcra)
	queue(gcra, s.gcraRunSQL, buckets, sizes, costs, tols)
	buckets, _, _ = columns(gcraLooks)
	queue(gcraLooks, s.gcraLookSQL, buckets)

	if err := s.send(ctx, batch, reads); err != nil {
		return err
	}
	for _, g := range groups {
		if err := replay(g); err != nil {
			return err
		}
	}
	return nil
}

// columns returns the buckets of list, the total cost of each one's calls,
// and each one's window, as the statements take them.
func columns(list []*bucketCalls) (buckets []string, totals, windows []int64) {
	buckets, totals, windows = make([]string, len(list)), make([]int64, len(list)), make([]int64, len(list))
	for i, g := range list {
		buckets[i], totals[i], windows[i] = g.bucket, g.total(), int64(g.calls[0].rule.Window)
	}
	return buckets, totals, windows
}

// runColumns returns what gcraRunSQL takes for buckets that each hold one
// run: the bucket, how many calls spend, what one costs and the tolerance,
// in nanoseconds.
func runColumns(list []*bucketCalls) (buckets []string, sizes, costs, tols []int64) {
	buckets = make([]string, len(list))
	sizes, costs, tols = make([]int64, len(list)), make([]int64, len(list)), make([]int64, len(list))
	for i, g := range list {
		rule := g.calls[0].rule
		buckets[i], costs[i] = g.bucket, g.cost()
		tols[i] = int64(store.Interval(rule)) * int64(rule.BurstOrLimit())
		sizes[i] = g.spends()
	}
	return buckets, sizes, costs, tols
}

// send runs the batch and reads its results in order.
func (s *Store) send(ctx context.Context, batch *pgx.Batch, reads []func(pgx.BatchResults) error) error {
	br := s.pool.SendBatch(ctx, batch)
	for _, read := range reads {
		if err := read(br); err != nil {
			br.Close()
			return err
		}
	}
	return br.Close()
}

// readRows reads the rows of the batch's next statement into the state of
// list's buckets, and fails unless each gets exactly one. Every statement
// returns (bucket, count, tat, now); see statements.go.
func readRows(br pgx.BatchResults, list []*bucketCalls) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	index := make(map[string]*bucketCalls, len(list))
	for _, g := range list {
		index[g.bucket] = g
	}
	for rows.Next() {
		var bucket string
		var st rowState
		if err := rows.Scan(&bucket, &st.count, &st.tat, &st.now); err != nil {
			return err
		}
		g := index[bucket]
		if g == nil {
			return fmt.Errorf("a batch statement returned bucket %q twice or unasked", bucket)
		}
		delete(index, bucket)
		st.seen = true
		g.state = st
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(index) > 0 {
		return fmt.Errorf("a batch statement returned no row for %d of %d buckets", len(index), len(list))
	}
	return nil
}

// rowState is what a round's statement returned for one bucket's row.
type rowState struct {
	seen  bool
	now   int64  // the time the round decided at, in nanoseconds since the epoch
	count int64  // fixed window: the count after the round; GCRA: how many calls passed
	tat   *int64 // GCRA: the tat after the round, nil for no row
}

// spends returns how many of g's calls spend (n > 0).
func (g *bucketCalls) spends() int64 {
	k := int64(0)
	for _, c := range g.calls {
		if c.n > 0 {
			k++
		}
	}
	return k
}

// total returns the cost of all of g's calls.
func (g *bucketCalls) total() int64 {
	t := int64(0)
	for _, c := range g.calls {
		t += int64(c.n)
	}
	return t
}

// cost returns what one spending call of a GCRA bucket's run costs, in
// nanoseconds (interval x n); [split] leaves one cost per bucket and round.
func (g *bucketCalls) cost() int64 {
	for _, c := range g.calls {
		if c.n > 0 {
			return int64(store.Interval(c.rule)) * int64(c.n)
		}
	}
	return 0
}

// replay decides each call of g in arrival order from the row's state
// before the round, as the arithmetic every store shares does one call at a
// time, and checks that it agrees with what the statement did.
func replay(g *bucketCalls) error {
	st := g.state
	if !st.seen {
		return errors.New("a batch statement returned no row for a bucket")
	}
	now := time.Unix(0, st.now)
	if g.alg == quota.FixedWindow {
		count := st.count - g.total() // the count before the round
		for _, c := range g.calls {
			count += int64(c.n)
			c.d = store.FixedWindowDecision(c.rule, now, count, c.n)
		}
		return nil
	}
	// The tat before the round: after k passes, the stored tat less their
	// cost (or now, if the tat had passed, which decides alike); after none,
	// the stored tat itself.
	tat := unixNano(st.tat, -st.count*g.cost())
	passed := int64(0)
	for _, c := range g.calls {
		c.d, tat = store.GCRADecision(c.rule, now, tat, c.n)
		if c.d.Allowed && c.n > 0 {
			passed++
		}
	}
	if passed != st.count {
		return fmt.Errorf("the statement let %d calls pass where the arithmetic lets %d; is the table's schema current?", st.count, passed)
	}
	return nil
}

// group gathers calls by bucket and algorithm, the buckets in first-arrival
// order and each bucket's calls in arrival order.
func group(calls []*call) []*bucketCalls {
	var out []*bucketCalls
	index := make(map[string]int, len(calls))
	for _, c := range calls {
		k := c.bucket
		if c.rule.Algorithm == quota.TokenBucket {
			k = "\x00" + k // a separate row from the same name's fixed windows
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, &bucketCalls{bucket: c.bucket, alg: c.rule.Algorithm})
		}
		out[i].calls = append(out[i].calls, c)
	}
	return out
}

// batchDecide decides the calls of one batch that are still due, by the
// earliest of their deadlines, answers the others with
// context.DeadlineExceeded, and signals every call; a [store.Batcher]
// hands it every batch. A call therefore has its answer by its deadline,
// however long it waited in the queue, without a timer of its own.
func (s *Store) batchDecide(calls []*call) {
	s.due = store.FlushDue(calls, s.due, s.decideF)
}

// runBatched queues a call of cost n on bucket under rule, due by
// deadline, and waits for its decision or ctx's end. A call whose ctx ends
// after it was queued may still be counted, as a direct call's would be
// after its deadline.
func (s *Store) runBatched(ctx context.Context, rule quota.Rule, bucket string, n int, deadline time.Time) (quota.Decision, error) {
	c := s.calls.Get().(*call)
	c.rule, c.bucket, c.n, c.deadline = rule, bucket, n, deadline
	if err := s.batch.Enqueue(ctx, c); err != nil {
		s.calls.Put(c)
		if errors.Is(err, store.ErrBatcherClosed) {
			err = ErrClosed
		}
		return quota.Decision{}, err
	}
	select {
	case <-c.done:
		d, err := c.d, c.err
		*c = call{done: c.done}
		s.calls.Put(c)
		return d, err
	case <-ctx.Done():
		// The flusher still holds c and will signal c.done; leave c to
		// the garbage collector rather than reuse it.
		return quota.Decision{}, ctx.Err()
	}
}

// ErrClosed is the store error of a call made after [Store.Close] on a
// batching store; it follows the failure policy like any store error.
var ErrClosed = errors.New("pgquota: store closed")
