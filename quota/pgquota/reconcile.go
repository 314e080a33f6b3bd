package pgquota

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

var _ quota.Reconciler = (*Store)(nil)

// gcraAddSQL moves the tat of bucket $2[i] to max(tat, now) + $3[i] (hits x
// interval, in nanoseconds) without deciding, past the tolerance $4[i] if
// it must, and returns the new tat. expires_at stays at or after the tat:
// it moves to tat + the slack (the longer of the tolerance and
// expirySlack, and a millisecond, for the microseconds timestamptz drops)
// only once the tat passes it, so most updates stay HOT. The insert's tat
// is now + $3[i] and its expires_at the tat + the slack, so the update
// reads its row's own $3[i] and slack from EXCLUDED: a
// lookup in u per row would make a reconcile of n buckets cost n^2.
const gcraAddSQL = `WITH ` + clockCTE + `,
u AS (SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(bucket, d, tol))
INSERT INTO {table} AS q (bucket, window_start, count, tat, expires_at)
SELECT u.bucket, '-infinity', 0, c.now + u.d, {ts:c.now + u.d + {slack:u.tol}}
FROM u, c ORDER BY u.bucket
ON CONFLICT (bucket, window_start) DO UPDATE SET
	tat = {added},
	expires_at = CASE WHEN q.expires_at < {ts:{added}}
		THEN {ts:{added}} + (EXCLUDED.expires_at - {ts:EXCLUDED.tat}) + interval '1 millisecond'
		ELSE q.expires_at END
RETURNING bucket, 0::bigint, tat, (SELECT now FROM c)`

// Reconcile adds each tally's hits to its bucket without deciding them and
// reports the bucket's state (see [quota.Reconciler]), all in one round
// trip and one commit: one statement per kind of work (fixed-window adds,
// fixed-window reads, GCRA adds, GCRA reads), each taking its buckets as
// arrays, rows locked in bucket order as a batch of decisions locks them.
// It is bounded by ctx's deadline, or the store's timeout when ctx has
// none, and never retried.
func (s *Store) Reconcile(ctx context.Context, tallies []quota.Tally) error {
	if err := store.CheckTallies(tallies, check); err != nil {
		return err
	}
	var fixed, fixedReads, gcra, gcraReads []*quota.Tally
	for i := range tallies {
		t := &tallies[i]
		switch {
		case t.Rule.Algorithm == quota.FixedWindow && t.Hits > 0:
			fixed = append(fixed, t)
		case t.Rule.Algorithm == quota.FixedWindow:
			fixedReads = append(fixedReads, t)
		case t.Hits > 0:
			gcra = append(gcra, t)
		default:
			gcraReads = append(gcraReads, t)
		}
	}
	var clock any
	if s.clock != nil {
		clock = s.clock().UnixNano()
	}
	batch := &pgx.Batch{}
	var lists [][]*quota.Tally
	queue := func(list []*quota.Tally, sql string, cols ...func(*quota.Tally) int64) {
		if len(list) == 0 {
			return
		}
		args := []any{clock, tallyBuckets(list)}
		for _, col := range cols {
			args = append(args, tallyColumn(list, col))
		}
		batch.Queue(sql, args...)
		lists = append(lists, list)
	}
	window := func(t *quota.Tally) int64 { return int64(t.Rule.Window) }
	queue(fixed, s.fixedSpendSQL, func(t *quota.Tally) int64 { return int64(t.Hits) }, window)
	queue(fixedReads, s.fixedLookSQL, window)
	queue(gcra, s.gcraAddSQL,
		func(t *quota.Tally) int64 { return int64(store.Interval(t.Rule)) * int64(t.Hits) },
		func(t *quota.Tally) int64 { return int64(store.Interval(t.Rule)) * int64(t.Rule.BurstOrLimit()) })
	queue(gcraReads, s.gcraLookSQL)

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.decider.Timeout)
		defer cancel()
	}
	br := s.pool.SendBatch(ctx, batch)
	for _, list := range lists {
		if err := readTallies(br, list); err != nil {
			br.Close()
			return fmt.Errorf("pgquota: reconcile: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("pgquota: reconcile: %w", err)
	}
	return nil
}

func tallyBuckets(list []*quota.Tally) []string {
	out := make([]string, len(list))
	for i, t := range list {
		out[i] = t.Rule.Name + ":" + t.Subject
	}
	return out
}

func tallyColumn(list []*quota.Tally, col func(*quota.Tally) int64) []int64 {
	out := make([]int64, len(list))
	for i, t := range list {
		out[i] = col(t)
	}
	return out
}

// readTallies reads the rows of the batch's next statement, (bucket, count,
// tat, now) as every statement returns them, into list's tallies, and fails
// unless each gets exactly one.
func readTallies(br pgx.BatchResults, list []*quota.Tally) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	index := make(map[string]*quota.Tally, len(list))
	for _, t := range list {
		index[t.Rule.Name+":"+t.Subject] = t
	}
	for rows.Next() {
		var bucket string
		var count, now int64
		var tat *int64
		if err := rows.Scan(&bucket, &count, &tat, &now); err != nil {
			return err
		}
		t := index[bucket]
		if t == nil {
			return fmt.Errorf("a reconcile statement returned bucket %q twice or unasked", bucket)
		}
		delete(index, bucket)
		t.Count, t.Now, t.TAT = count, unixNano(&now, 0), unixNano(tat, 0)
		if !t.TAT.After(t.Now) {
			t.TAT = time.Time{} // a full bucket, as one the table does not hold
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(index) > 0 {
		return fmt.Errorf("a reconcile statement returned no row for %d of %d buckets", len(index), len(list))
	}
	return nil
}
