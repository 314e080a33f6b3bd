package pgquota

import (
	"context"
	"fmt"
	"time"
)

// DefaultSweepBatch is how many rows one sweep statement deletes at most when
// Sweep is given a batch of 0.
const DefaultSweepBatch = 5000

// DefaultSweepEvery is how often SweepEvery sweeps when given 0.
const DefaultSweepEvery = time.Minute

// SweepGrace is how long past its expiry a row is kept. A replica whose clock
// lags the sweeper's a little is still counting in a window the sweeper sees
// as over; deleting the row would let that replica start the count afresh.
// The Redis store keeps its keys the same grace longer.
const SweepGrace = time.Second

// sweepSQL deletes up to $2 rows that expired by $1, or when $1 is NULL by
// the database's now() less $3 microseconds. The ctid subquery bounds
// the rows one statement locks; SKIP LOCKED lets two sweeps run at once on
// disjoint rows and leaves rows a decision holds alone. A row updated after
// the subquery read it has a new ctid and a later expires_at, and is kept.
const sweepSQL = `DELETE FROM {table} WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM {table}
	WHERE expires_at <= COALESCE($1::timestamptz, now() - $3::bigint * interval '1 microsecond')
	LIMIT $2 FOR UPDATE SKIP LOCKED))`

// Sweep deletes the rows that expired by now (the store's clock) less
// [SweepGrace], in statements of at most batch rows (0 means [DefaultSweepBatch]), until a
// statement deletes fewer than batch. Each statement commits on its own, so
// none holds locks for long and a cancelled sweep keeps what it did. It
// returns how many rows it deleted. Expired rows decide like missing ones, so
// sweeping never changes a decision; it only keeps the table small.
func (s *Store) Sweep(ctx context.Context, batch int) (int64, error) {
	if batch < 0 {
		return 0, fmt.Errorf("%w: sweep batch %d, want 0 (the default) or more", ErrConfig, batch)
	}
	if batch == 0 {
		batch = DefaultSweepBatch
	}
	var before any // NULL: the database's clock
	if s.clock != nil {
		before = s.clock().Add(-SweepGrace)
	}
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, s.sweepSQL, before, batch, SweepGrace.Microseconds())
		if err != nil {
			return total, fmt.Errorf("pgquota: sweep %s: %w", s.table.name, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}

// SweepEvery sweeps once, then every interval (0 means [DefaultSweepEvery]),
// with batches of batch rows, until ctx ends. A failed sweep is logged to
// Config.Logger at Warn and retried at the next tick. Run it in its own goroutine
// on one or more replicas; concurrent sweeps are safe.
func (s *Store) SweepEvery(ctx context.Context, interval time.Duration, batch int) {
	if interval <= 0 {
		interval = DefaultSweepEvery
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		n, err := s.Sweep(ctx, batch)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.logger.Warn("pgquota: sweep failed", "table", s.table.name, "err", err)
		default:
			s.logger.Debug("pgquota: swept", "table", s.table.name, "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
