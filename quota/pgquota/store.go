package pgquota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// DefaultTable is the table a store uses when [Config].Table is empty.
const DefaultTable = "admit_quota"

// DefaultTimeout bounds a decision when [Config].Timeout is 0: room for a
// busy pool and a primary under load, short enough that an outage costs each
// request little.
const DefaultTimeout = 250 * time.Millisecond

// ErrConfig reports a configuration the store cannot work with.
var ErrConfig = errors.New("pgquota: invalid config")

// Config configures a [Store]. The zero Config is valid: table admit_quota on
// the pool's search_path, the system clock, fail closed, [DefaultTimeout], the
// global meter provider.
type Config struct {
	// Table is the store's table; empty means [DefaultTable]. It may be
	// schema-qualified ("quota.admit_quota"); each part must be a lowercase
	// identifier (letters, digits, underscores) and the table's own name at
	// most 48 bytes, so the SQL needs no quoting to apply by hand.
	Table string
	// Now returns the current time; nil means time.Now. Windows and GCRA
	// arrival times come from each replica's clock, not the database's, so
	// replicas' clocks must agree to well within a window.
	Now func() time.Time
	// Failure is what a call the store cannot decide (PostgreSQL down, slow
	// past Timeout, or failing) gets; see [quota.Policy]. The zero value is
	// quota.FailClosed.
	Failure quota.Policy
	// Timeout bounds each decision, waiting for a pooled connection
	// included; 0 means [DefaultTimeout]. A call that runs out of time
	// follows the failure policy; its increment may still have been applied.
	Timeout time.Duration
	// MeterProvider receives the store's metrics (admit.quota.decisions and
	// admit.quota.latency with store "postgres"); nil means the global meter
	// provider.
	MeterProvider metric.MeterProvider
	// Logger receives SweepEvery's failures and progress; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Store is a [quota.Charger] whose buckets are rows in one PostgreSQL table,
// so every replica that shares the database shares the limits. Each decision
// is one statement on one row; see the package documentation.
//
// A Store holds no mutable state of its own and is safe for concurrent use;
// its throughput is bounded by the pool's connections.
type Store struct {
	pool    *pgxpool.Pool
	table   table
	now     func() time.Time
	decider store.Decider
	logger  *slog.Logger

	// Statements, built once for the configured table.
	fixedSQL, fixedLookSQL, gcraSQL, gcraLookSQL, sweepSQL, fixedRefundSQL, gcraRefundSQL string
}

var _ quota.Charger = (*Store)(nil)

// New returns a store that keeps its buckets in cfg.Table through pool. It
// does not touch the database: a server that is down at startup follows the
// failure policy like any later outage. Create the table with
// [Store.Migrate] or by hand (see [Store.Schema]).
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", ErrConfig)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: Timeout %v, want 0 (the default) or more", ErrConfig, cfg.Timeout)
	}
	name := cfg.Table
	if name == "" {
		name = DefaultTable
	}
	t, err := parseTable(name)
	if err != nil {
		return nil, err
	}
	m, err := store.NewMetrics(cfg.MeterProvider, "postgres")
	if err != nil {
		return nil, fmt.Errorf("pgquota: metrics: %w", err)
	}
	s := &Store{
		pool:    pool,
		table:   t,
		now:     cfg.Now,
		decider: store.Decider{Prefix: "pgquota", Failure: cfg.Failure, Timeout: cfg.Timeout, Metrics: m},
		logger:  cfg.Logger,
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.decider.Timeout == 0 {
		s.decider.Timeout = DefaultTimeout
	}
	r := strings.NewReplacer("{table}", t.quoted)
	s.fixedSQL = r.Replace(fixedSQL)
	s.fixedLookSQL = r.Replace(fixedLookSQL)
	s.gcraSQL = r.Replace(gcraSQL)
	s.gcraLookSQL = r.Replace(gcraLookSQL)
	s.sweepSQL = r.Replace(sweepSQL)
	s.fixedRefundSQL = r.Replace(fixedRefundSQL)
	s.gcraRefundSQL = r.Replace(gcraRefundSQL)
	return s, nil
}

// The statements, with {table} standing for the quoted table name.
const (
	// fixedSQL counts $3 calls in the window starting at $2. Two callers
	// racing on a bucket serialise on the primary key; each sees its own
	// count.
	fixedSQL = `INSERT INTO {table} AS q (bucket, window_start, count, expires_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (bucket, window_start) DO UPDATE SET count = q.count + EXCLUDED.count
RETURNING count`
	fixedLookSQL = `SELECT count FROM {table} WHERE bucket = $1 AND window_start = $2`

	// gcraSQL is the shared GCRA arithmetic in SQL, in nanoseconds: $2 now, $3 the
	// call's cost (interval x n), $4 the tolerance (interval x burst), $5 n.
	// A call is allowed when max(tat, now) + cost - tolerance <= now; then
	// tat moves to max(tat, now) + cost, otherwise it stays. count reports
	// the grant, so the caller can tell an allowed call from a refused one
	// with the same tat. expires_at, which must stay at or after tat, moves
	// to $7 (now + 2 x tolerance) only once it falls below $6 (now +
	// tolerance, the furthest an allowed call can push tat): at most once per
	// tolerance, so nearly every update is HOT.
	gcraSQL = `INSERT INTO {table} AS q (bucket, window_start, count, tat, expires_at)
VALUES ($1, '-infinity',
	CASE WHEN $3::bigint <= $4::bigint THEN $5::bigint ELSE 0 END,
	CASE WHEN $3 <= $4 THEN $2::bigint + $3 END,
	$7::timestamptz)
ON CONFLICT (bucket, window_start) DO UPDATE SET
	count = CASE WHEN GREATEST(q.tat, $2) + $3 - $4 <= $2 THEN $5 ELSE 0 END,
	tat = CASE WHEN GREATEST(q.tat, $2) + $3 - $4 <= $2 THEN GREATEST(q.tat, $2) + $3 ELSE q.tat END,
	expires_at = CASE WHEN GREATEST(q.tat, $2) + $3 - $4 <= $2 AND q.expires_at < $6::timestamptz THEN $7 ELSE q.expires_at END
RETURNING count, tat`
	gcraLookSQL = `SELECT tat FROM {table} WHERE bucket = $1 AND window_start = '-infinity'`

	// The refunds: a window's count drops by $3, never below zero; a GCRA
	// bucket's tat moves back by $2 (interval x n). A tat that falls before
	// now decides as a full bucket, so it needs no floor.
	fixedRefundSQL = `UPDATE {table} SET count = GREATEST(count - $3, 0) WHERE bucket = $1 AND window_start = $2`
	gcraRefundSQL  = `UPDATE {table} SET tat = tat - $2 WHERE bucket = $1 AND window_start = '-infinity'`
)

// Refund gives back n calls of subject counted against rule (see
// [quota.Charger]), in one statement bounded by the store's timeout. A
// store error is returned; there is no decision for a policy to make.
func (s *Store) Refund(ctx context.Context, rule quota.Rule, subject string, n int) error {
	if err := check(rule, subject, n); err != nil || n == 0 {
		return err
	}
	now := time.Unix(0, s.now().UnixNano())
	bucket := rule.Name + ":" + subject
	ctx, cancel := context.WithTimeout(ctx, s.decider.Timeout)
	defer cancel()
	var err error
	if rule.Algorithm == quota.GCRA {
		_, err = s.pool.Exec(ctx, s.gcraRefundSQL, bucket, int64(store.Interval(rule))*int64(n))
	} else {
		_, err = s.pool.Exec(ctx, s.fixedRefundSQL, bucket, store.WindowStart(now, rule.Window), int64(n))
	}
	if err != nil {
		return fmt.Errorf("pgquota: rule %q: refund: %w", rule.Name, err)
	}
	return nil
}

// Allow counts one call of subject against rule; see [Store.AllowN].
func (s *Store) Allow(ctx context.Context, rule quota.Rule, subject string) (quota.Decision, error) {
	return s.AllowN(ctx, rule, subject, 1)
}

// AllowN counts n calls of subject against rule in one statement; n = 0
// reports whether one more call would be allowed and changes nothing (it only
// reads). The decision is the one the in-memory and Redis stores give for the
// same time and bucket state. A caller error (an invalid rule or cost, a
// subject that did not come from [quota.Subject], a rule name that is not
// valid UTF-8 or holds a NUL byte) is refused with an error wrapping
// [quota.ErrRule] or [quota.ErrSubject]; a store error follows the failure
// policy and is returned with its decision. The statement is never retried.
func (s *Store) AllowN(ctx context.Context, rule quota.Rule, subject string, n int) (quota.Decision, error) {
	if err := check(rule, subject, n); err != nil {
		return store.Refuse(rule, err)
	}
	// Rows hold nanoseconds since the epoch; drop the monotonic reading so
	// the arithmetic here and in SQL sees the same instant.
	now := time.Unix(0, s.now().UnixNano())
	bucket := rule.Name + ":" + subject
	return s.decider.Decide(ctx, rule, func(ctx context.Context) (quota.Decision, error) {
		if rule.Algorithm == quota.GCRA {
			return s.gcra(ctx, rule, bucket, n, now)
		}
		return s.fixedWindow(ctx, rule, bucket, n, now)
	})
}

func check(rule quota.Rule, subject string, n int) error {
	if err := store.Check(rule, subject, n); err != nil {
		return err
	}
	if !utf8.ValidString(rule.Name) || strings.IndexByte(rule.Name, 0) >= 0 {
		return fmt.Errorf("%w %q: name must be valid UTF-8 without NUL bytes", quota.ErrRule, rule.Name)
	}
	return nil
}

func (s *Store) fixedWindow(ctx context.Context, rule quota.Rule, bucket string, n int, now time.Time) (quota.Decision, error) {
	ws := store.WindowStart(now, rule.Window)
	var count int64
	var err error
	if n == 0 {
		err = s.pool.QueryRow(ctx, s.fixedLookSQL, bucket, ws).Scan(&count)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	} else {
		err = s.pool.QueryRow(ctx, s.fixedSQL, bucket, ws, int64(n), ws.Add(rule.Window)).Scan(&count)
	}
	if err != nil {
		return quota.Decision{}, err
	}
	return store.FixedWindowDecision(rule, now, count, n), nil
}

func (s *Store) gcra(ctx context.Context, rule quota.Rule, bucket string, n int, now time.Time) (quota.Decision, error) {
	var tat *int64
	if n == 0 {
		err := s.pool.QueryRow(ctx, s.gcraLookSQL, bucket).Scan(&tat)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return quota.Decision{}, err
		}
		d, _ := store.GCRADecision(rule, now, unixNano(tat, 0), 0)
		return d, nil
	}
	interval := store.Interval(rule)
	cost := interval * time.Duration(n)
	tolerance := interval * time.Duration(rule.BurstOrLimit())
	var granted int64
	err := s.pool.QueryRow(ctx, s.gcraSQL, bucket, now.UnixNano(), int64(cost), int64(tolerance), int64(n),
		now.Add(tolerance), now.Add(2*tolerance+time.Microsecond)).Scan(&granted, &tat)
	if err != nil {
		return quota.Decision{}, err
	}
	allowed := granted > 0
	// Recompute the decision from the tat the statement started from:
	// after an allowed call that is the stored tat minus the cost (or now,
	// which decides alike), after a refused one the stored tat itself.
	base := unixNano(tat, 0)
	if allowed {
		base = unixNano(tat, -int64(cost))
	}
	d, _ := store.GCRADecision(rule, now, base, n)
	if d.Allowed != allowed {
		return quota.Decision{}, fmt.Errorf("statement allowed=%v but the arithmetic says %v; is the table's schema current?", allowed, d.Allowed)
	}
	return d, nil
}

// unixNano turns a stored tat plus delta into a time; NULL (no tat) is the
// zero time, which the GCRA arithmetic treats as a new bucket.
func unixNano(ns *int64, delta int64) time.Time {
	if ns == nil {
		return time.Time{}
	}
	return time.Unix(0, *ns+delta)
}

// CheckRule reports whether the store can enforce rule (quota.RuleChecker),
// with the error a call with that rule would return.
func (s *Store) CheckRule(rule quota.Rule) error {
	return check(rule, quota.Subject(""), 1)
}
