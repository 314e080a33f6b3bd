package pgquota

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// Hit is one addition to a counter, as [Counter.Count] takes it.
//
// Deprecated: use [quota.Hit], which Hit is; every store's Counter takes it.
type Hit = quota.Hit

// CounterConfig configures a [Counter]. The zero value is valid: table
// admit_quota, the database's clock, [DefaultTimeout], no batching.
type CounterConfig struct {
	// Table is the table the counters are rows of, the quota store's
	// (see [Config].Table); empty means [DefaultTable]. A [Store] on the
	// same table creates it ([Store.Migrate]) and sweeps it.
	Table string
	// Now is the clock windows are aligned by; nil means the database's
	// own (now(), once per statement). Tests inject one.
	Now func() time.Time
	// Timeout bounds each Count, waiting for a pooled connection included;
	// 0 means [DefaultTimeout].
	Timeout time.Duration
	// Batch, above 1, counts the hits of concurrent Count calls together,
	// up to Batch calls in one statement and one commit; hits on one
	// counter become one row update and each gets the count it would have
	// had alone. The counter must then be closed with [Counter.Close]. 0 or
	// 1 counts each Count in a statement of its own.
	Batch int
}

// Counter counts hits in fixed windows aligned to the Unix epoch, as
// envoyproxy/ratelimit counts in Redis: every hit is added, over a limit or
// not, and the caller decides from the count after. A counter's window is a
// row of the quota store's table, bucket "count:" + Key + ":" + window
// seconds, which expires at the window's end, so [Store.Sweep] deletes it
// like a fixed-window bucket.
//
// Use [NewCounter]; the zero Counter is not usable. It is safe for
// concurrent use.
type Counter struct {
	pool    *pgxpool.Pool
	sql     string
	now     func() time.Time // nil: the database's
	timeout time.Duration
	batch   *store.Batcher[*store.CountJob] // nil unless Batch > 1
	counts  store.Counts
}

// countSQL adds $3[i] to the count of bucket $2[i] in its window of $4[i]
// seconds that holds the clock $1 (Unix seconds, or NULL for the
// database's), once per bucket, and returns the counts after and the clock.
// Rows are taken in bucket order so that two batches cannot deadlock.
const countSQL = `WITH c AS (SELECT COALESCE($1::bigint, floor(EXTRACT(EPOCH FROM now()))::bigint) AS now),
u AS (SELECT u.bucket, u.n, u.w, c.now - c.now % u.w AS ws
	FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(bucket, n, w), c)
INSERT INTO {table} AS q (bucket, window_start, count, expires_at)
SELECT bucket, to_timestamp(ws), n, to_timestamp(ws + w) FROM u ORDER BY bucket
ON CONFLICT (bucket, window_start) DO UPDATE SET count = q.count + EXCLUDED.count
RETURNING bucket, count, (SELECT now FROM c)`

// NewCounter returns a counter whose counts are rows of cfg.Table through
// pool. It does not touch the database.
func NewCounter(pool *pgxpool.Pool, cfg CounterConfig) (*Counter, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", ErrConfig)
	}
	if cfg.Timeout < 0 || cfg.Batch < 0 {
		return nil, fmt.Errorf("%w: Timeout %v and Batch %d, want 0 (the default) or more", ErrConfig, cfg.Timeout, cfg.Batch)
	}
	name := cfg.Table
	if name == "" {
		name = DefaultTable
	}
	t, err := parseTable(name)
	if err != nil {
		return nil, err
	}
	c := &Counter{pool: pool, sql: expand(countSQL, t.quoted), now: cfg.Now, timeout: cfg.Timeout}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if cfg.Batch > 1 {
		c.batch = store.NewBatcher(cfg.Batch, c.flush)
	}
	return c, nil
}

// Close stops a batching counter's flusher; later calls fail with
// [ErrClosed]. It does not close the pool. It always returns nil.
func (c *Counter) Close() error {
	if c.batch != nil {
		c.batch.Close()
	}
	return nil
}

// Count adds each hit's N to its counter's count in the window that holds
// the database's current time, in order, and sets the hit's Count to the
// count after, so that two hits on one counter see one another as two
// requests would. It returns the time the database counted by, in whole
// seconds. An error means the database did not answer in time or failed;
// the hits may still have been counted. The statement is never retried.
func (c *Counter) Count(ctx context.Context, hits []quota.Hit) (time.Time, error) {
	for _, h := range hits {
		if h.Window < time.Second || h.Window%time.Second != 0 {
			return time.Time{}, fmt.Errorf("pgquota: window %v, want whole seconds, at least one", h.Window)
		}
		if err := checkCountKey(h.Key); err != nil {
			return time.Time{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.batch == nil {
		j := store.CountJob{Hits: hits}
		c.exec(ctx, []*store.CountJob{&j})
		return j.Now, j.Err
	}
	now, answered, err := c.counts.Submit(ctx, c.batch, hits)
	if !answered {
		if errors.Is(err, store.ErrBatcherClosed) {
			err = ErrClosed
		}
		err = fmt.Errorf("pgquota: count: %w", err)
	}
	return now, err
}

// checkCountKey refuses keys a text column cannot hold.
func checkCountKey(key string) error {
	if !utf8.ValidString(key) || strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("pgquota: counter key %q: want valid UTF-8 without NUL bytes", key)
	}
	return nil
}

// flush counts one batch under the counter's timeout and answers its jobs.
func (c *Counter) flush(jobs []*store.CountJob) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	c.exec(ctx, jobs)
	cancel()
	for _, j := range jobs {
		j.Answer()
	}
}

// countGroup is the hits of a batch on one row, in arrival order.
type countGroup struct {
	total uint64
	hits  []*quota.Hit
}

// exec counts the hits of jobs in one statement and sets each job's time
// and error.
func (c *Counter) exec(ctx context.Context, jobs []*store.CountJob) {
	var buckets []string
	var totals, windows []int64
	index := make(map[string]*countGroup)
	for _, j := range jobs {
		for i := range j.Hits {
			h := &j.Hits[i]
			w := int64(h.Window / time.Second)
			b := "count:" + h.Key + ":" + strconv.FormatInt(w, 10)
			g := index[b]
			if g == nil {
				g = &countGroup{}
				index[b] = g
				buckets = append(buckets, b)
				windows = append(windows, w)
			}
			g.total += h.N
			g.hits = append(g.hits, h)
		}
	}
	for _, b := range buckets {
		totals = append(totals, int64(min(index[b].total, 1<<63-1)))
	}
	var clock any
	if c.now != nil {
		clock = c.now().Unix()
	}
	now, err := c.query(ctx, clock, buckets, totals, windows, index)
	for _, j := range jobs {
		j.Now, j.Err = now, err
	}
}

// query runs the statement and sets every hit's count from the rows.
func (c *Counter) query(ctx context.Context, clock any, buckets []string, totals, windows []int64, index map[string]*countGroup) (time.Time, error) {
	rows, err := c.pool.Query(ctx, c.sql, clock, buckets, totals, windows)
	if err != nil {
		return time.Time{}, fmt.Errorf("pgquota: count: %w", err)
	}
	defer rows.Close()
	var now int64
	seen := 0
	for rows.Next() {
		var bucket string
		var after int64
		if err := rows.Scan(&bucket, &after, &now); err != nil {
			return time.Time{}, fmt.Errorf("pgquota: count: %w", err)
		}
		g := index[bucket]
		if g == nil || after < 0 || uint64(after) < g.total {
			return time.Time{}, fmt.Errorf("pgquota: count: row %q with count %d", bucket, after)
		}
		count := uint64(after) - g.total
		for _, h := range g.hits {
			count += h.N
			h.Count = count
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return time.Time{}, fmt.Errorf("pgquota: count: %w", err)
	}
	if seen != len(buckets) {
		return time.Time{}, fmt.Errorf("pgquota: count: %d rows for %d counters", seen, len(buckets))
	}
	return time.Unix(now, 0), nil
}
