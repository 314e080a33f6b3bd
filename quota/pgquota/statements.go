package pgquota

import (
	"fmt"
	"strings"
	"time"
)

// The statements of a batch, with {table} standing for the quoted table
// name. Each takes $1, the clock: nanoseconds since the epoch, or NULL for
// the database's own clock, read once per batch (now() is the time its
// transaction began, the same for every statement of a batch), so that
// replicas whose clocks disagree still count in the same windows. Each
// returns the time it decided at, for the arithmetic in Go. Rows are taken
// in the order of their bucket, so two batches touching the same rows lock
// them in the same order and cannot deadlock.
const (
	clockCTE = `c AS (SELECT COALESCE($1::bigint, (EXTRACT(EPOCH FROM now()) * 1000000)::bigint * 1000) AS now)`

	// fixedSpendSQL adds $3[i] to the count of bucket $2[i] in its window of
	// $4[i] nanoseconds, once per bucket, and returns the new counts.
	fixedSpendSQL = `WITH ` + clockCTE + `,
u AS (SELECT u.bucket, u.n, u.w, {start:c.now,u.w} AS ws
	FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(bucket, n, w), c)
INSERT INTO {table} AS q (bucket, window_start, count, expires_at)
SELECT bucket, {ts:ws}, n, {ts:ws + w} FROM u ORDER BY bucket
ON CONFLICT (bucket, window_start) DO UPDATE SET count = q.count + EXCLUDED.count
RETURNING bucket, count, NULL::bigint, (SELECT now FROM c)`

	// fixedLookSQL reads the counts of buckets $2 in their windows of $3
	// nanoseconds, writing nothing.
	fixedLookSQL = `WITH ` + clockCTE + `
SELECT u.bucket, COALESCE(q.count, 0), NULL::bigint, c.now
FROM unnest($2::text[], $3::bigint[]) AS u(bucket, w) CROSS JOIN c
LEFT JOIN {table} q ON q.bucket = u.bucket AND q.window_start = {ts:{start:c.now,u.w}}`

	// gcraRunSQL is the shared GCRA arithmetic in SQL, in nanoseconds, for a
	// run of $3[i] calls of one cost, $4[i] (interval x n), on bucket $2[i]
	// with tolerance $5[i] (interval x burst). A run's calls pass while
	// max(tat, now) + cost - tolerance <= now, then the rest are refused:
	// once one is refused the tat stays, so the next of the same cost is
	// refused too. So k = min(calls, (tolerance - (max(tat, now) - now)) /
	// cost) pass, and tat moves to max(tat, now) + k x cost. count reports k.
	// expires_at, which must stay at or after tat, moves to now + tolerance
	// + the slack (the longer of the tolerance and expirySlack) only once it
	// falls below now + tolerance: at most once per slack, so nearly every
	// update of a client who comes back within it is HOT. The update takes
	// its row's figures from u in one sub-select, computing k once: a
	// lookup of u for each use cost a batch of n buckets about 12 n^2 row
	// visits.
	gcraRunSQL = `WITH ` + clockCTE + `,
u AS (SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS u(bucket, m, cost, tol))
INSERT INTO {table} AS q (bucket, window_start, count, tat, expires_at)
SELECT u.bucket, '-infinity', LEAST(u.m, u.tol / u.cost),
	CASE WHEN u.tol >= u.cost THEN c.now + LEAST(u.m, u.tol / u.cost) * u.cost END,
	{ts:c.now + u.tol + {slack:u.tol}}
FROM u, c ORDER BY u.bucket
ON CONFLICT (bucket, window_start) DO UPDATE SET (count, tat, expires_at) = (
	SELECT x.k, CASE WHEN x.k > 0 THEN x.base + x.k * x.cost ELSE q.tat END,
		CASE WHEN x.k > 0 AND q.expires_at < {ts:x.now + x.tol} THEN {ts:x.now + x.tol + {slack:x.tol}} ELSE q.expires_at END
	FROM (SELECT LEAST(u.m, GREATEST(0, (u.tol - (b.base - c.now)) / u.cost)) AS k, b.base, u.cost, u.tol, c.now
		FROM u, c, LATERAL (SELECT GREATEST(COALESCE(q.tat, c.now), c.now) AS base) b
		WHERE u.bucket = q.bucket) x)
RETURNING bucket, count, tat, (SELECT now FROM c)`

	// gcraLookSQL reads the tat of buckets $2, writing nothing.
	gcraLookSQL = `WITH ` + clockCTE + `
SELECT u.bucket, 0::bigint, q.tat, c.now
FROM unnest($2::text[]) AS u(bucket) CROSS JOIN c
LEFT JOIN {table} q ON q.bucket = u.bucket AND q.window_start = '-infinity'`
)

// expirySlack is the least time a GCRA row's expires_at moves ahead by.
// Moving it writes new entries in both of the table's indexes (the update
// is not HOT); moving it by at least a minute keeps the updates of a
// client who calls less often than once per burst period, but within a
// minute, in place, at the price of keeping an idle row up to a minute
// longer.
const expirySlack = time.Minute

// expand writes a statement out: the table, the reconcile's GCRA
// expressions ({added}: the tat after the hits; {base}: max(tat, now)),
// how far expires_at moves ahead ({slack:TOLERANCE}: the longer of the
// tolerance and expirySlack, in nanoseconds), window
// starts ({start:NOW,WINDOW}, NOW rounded down to a multiple of WINDOW,
// before 1970 too) and timestamps from nanoseconds ({ts:EXPR}, exact to the
// microsecond that timestamptz keeps).
func expand(stmt, table string) string {
	stmt = strings.ReplaceAll(stmt, "{added}", "{base} + (EXCLUDED.tat - (SELECT now FROM c))")
	stmt = strings.NewReplacer(
		"{base}", "GREATEST(COALESCE(q.tat, (SELECT now FROM c)), (SELECT now FROM c))",
		"{table}", table,
	).Replace(stmt)
	stmt = expandEach(stmt, "slack", func(tol string) string {
		return fmt.Sprintf("GREATEST(%s, %d)", tol, expirySlack.Nanoseconds())
	})
	stmt = expandEach(stmt, "start", func(args string) string {
		now, window, _ := strings.Cut(args, ",")
		return fmt.Sprintf("(%[1]s - ((%[1]s %% %[2]s) + %[2]s) %% %[2]s)", now, window)
	})
	return expandEach(stmt, "ts", func(expr string) string {
		return "('epoch'::timestamptz + ((" + expr + ") / 1000) * interval '1 microsecond')"
	})
}

// expandEach replaces each {name:ARGS} in stmt, outermost first, with what
// f makes of ARGS; an expansion may hold further ones, which are expanded
// in turn.
func expandEach(stmt, name string, f func(args string) string) string {
	open := "{" + name + ":"
	for {
		i := strings.Index(stmt, open)
		if i < 0 {
			return stmt
		}
		j := matchingBrace(stmt, i)
		stmt = stmt[:i] + f(stmt[i+len(open):j]) + stmt[j+1:]
	}
}

// matchingBrace returns the index of the brace that closes the one at i.
func matchingBrace(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	panic("pgquota: unbalanced braces in a statement")
}
