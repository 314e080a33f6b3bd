package pgquota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
// the pool's search_path, the database's clock, no batching, fail closed, [DefaultTimeout], the
// global meter provider.
type Config struct {
	// Table is the store's table; empty means [DefaultTable]. It may be
	// schema-qualified ("quota.admit_quota"); each part must be a lowercase
	// identifier (letters, digits, underscores) and the table's own name at
	// most 48 bytes, so the SQL needs no quoting to apply by hand.
	Table string
	// Now is the clock decisions are made by; nil means the database's own
	// (now(), read once per batch), so that replicas whose clocks disagree
	// still count in the same windows and share a bucket fairly. Tests
	// inject one.
	Now func() time.Time
	// Batch, above 1, decides concurrent calls together, up to Batch in one
	// round trip and one commit (see the package documentation); calls on
	// one bucket in a batch become one row update and each gets the decision
	// it would have had alone. It costs a lone call a goroutine handoff. The
	// store must then be closed with [Store.Close]. 0 or 1 decides each call
	// in its own round trip.
	Batch int
	// Failure is what a call the store cannot decide (PostgreSQL down, slow
	// past Timeout, or failing) gets: a
	// [quota.Failure], under which FailOpen allows and every other value
	// refuses, with the error. The zero value is quota.FailClosed.
	Failure quota.Failure
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
// so every replica that shares the database shares the limits; see the
// package documentation for how it decides and batches.
//
// A Store is safe for concurrent use. Unbatched, its throughput is bounded by
// the pool's connections; batched, by one round trip of up to Config.Batch
// decisions at a time.
type Store struct {
	pool    *pgxpool.Pool
	table   table
	clock   func() time.Time // nil: the database's
	decider store.Decider
	logger  *slog.Logger
	batch   *store.Batcher[*call]          // nil unless Config.Batch > 1
	calls   sync.Pool                      // of *call with a done channel, for batching
	due     []*call                        // the flusher's: the calls of its batch still due
	decideF func(context.Context, []*call) // s.decide, made once so that a batch allocates no method value

	// Statements, built once for the configured table.
	fixedSpendSQL, fixedLookSQL, gcraRunSQL, gcraLookSQL, gcraAddSQL, sweepSQL, fixedRefundSQL, gcraRefundSQL string
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
	if cfg.Batch < 0 {
		return nil, fmt.Errorf("%w: Batch %d, want 0 (no batching) or more", ErrConfig, cfg.Batch)
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
		clock:   cfg.Now,
		decider: store.Decider{Prefix: "pgquota", Failure: cfg.Failure, Timeout: cfg.Timeout, Metrics: m},
		logger:  cfg.Logger,
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.decider.Timeout == 0 {
		s.decider.Timeout = DefaultTimeout
	}
	s.fixedSpendSQL = expand(fixedSpendSQL, t.quoted)
	s.fixedLookSQL = expand(fixedLookSQL, t.quoted)
	s.gcraRunSQL = expand(gcraRunSQL, t.quoted)
	s.gcraLookSQL = expand(gcraLookSQL, t.quoted)
	s.gcraAddSQL = expand(gcraAddSQL, t.quoted)
	s.sweepSQL = expand(sweepSQL, t.quoted)
	s.fixedRefundSQL = expand(fixedRefundSQL, t.quoted)
	s.gcraRefundSQL = expand(gcraRefundSQL, t.quoted)
	if cfg.Batch > 1 {
		s.calls.New = func() any { return &call{done: make(chan struct{}, 1)} }
		s.decideF = s.decide
		s.batch = store.NewBatcher(cfg.Batch, s.batchDecide)
	}
	return s, nil
}

// The refunds: a window's count drops by $3, never below zero; a GCRA
// bucket's tat moves back by $2 (interval x n). A tat that falls before now
// decides as a full bucket, so it needs no floor. $1 of the fixed-window
// refund is the clock, as in the batch statements.
const (
	fixedRefundSQL = `WITH ` + clockCTE + `
UPDATE {table} SET count = GREATEST(count - $3, 0) FROM c
WHERE bucket = $2 AND window_start = {ts:{start:c.now,$4::bigint}}`
	gcraRefundSQL = `UPDATE {table} SET tat = tat - $2 WHERE bucket = $1 AND window_start = '-infinity'`
)

// Close stops a batching store's flusher; later calls fail with
// [ErrClosed] and follow the failure policy. It does not close the pool. On
// a store that does not batch it does nothing. It always returns nil.
func (s *Store) Close() error {
	if s.batch != nil {
		s.batch.Close()
	}
	return nil
}

// Refund gives back n calls of subject counted against rule (see
// [quota.Charger]), in one statement bounded by the store's timeout. A
// store error is returned; there is no decision for a policy to make.
func (s *Store) Refund(ctx context.Context, rule quota.Rule, subject string, n int) error {
	if err := check(rule, subject, n); err != nil || n == 0 {
		return err
	}
	var clock any
	if s.clock != nil {
		clock = s.clock().UnixNano()
	}
	bucket := rule.Name + ":" + subject
	ctx, cancel := context.WithTimeout(ctx, s.decider.Timeout)
	defer cancel()
	var err error
	if rule.Algorithm == quota.TokenBucket {
		_, err = s.pool.Exec(ctx, s.gcraRefundSQL, bucket, int64(store.Interval(rule))*int64(n))
	} else {
		_, err = s.pool.Exec(ctx, s.fixedRefundSQL, clock, bucket, int64(n), int64(rule.Window))
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

// AllowN counts n calls of subject against rule; n = 0
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
	bucket := rule.Name + ":" + subject
	if s.batch != nil {
		return s.decider.DecideBy(ctx, rule, func(ctx context.Context, deadline time.Time) (quota.Decision, error) {
			return s.runBatched(ctx, rule, bucket, n, deadline)
		})
	}
	return s.decider.Decide(ctx, rule, func(ctx context.Context) (quota.Decision, error) {
		c := &call{rule: rule, bucket: bucket, n: n}
		s.decide(ctx, []*call{c})
		return c.d, c.err
	})
}

func check(rule quota.Rule, subject string, n int) error {
	if err := store.Check(rule, subject, n); err != nil {
		return err
	}
	if !utf8.ValidString(rule.Name) || strings.IndexByte(rule.Name, 0) >= 0 {
		return &quota.RuleError{Rule: rule.Name, Reason: "name must be valid UTF-8 without NUL bytes"}
	}
	if rule.Algorithm == quota.TokenBucket && !store.SpanWithin(rule, n, maxSpan) {
		return &quota.RuleError{Rule: rule.Name, Reason: fmt.Sprintf("burst and cost %d span more than the PostgreSQL store's 2^61ns (about 73 years)", n)}
	}
	return nil
}

// maxSpan is the longest span, in nanoseconds, that a GCRA rule's burst and
// one call may cover: the statements add the tolerance and the longer of it
// and a minute to the clock in bigint nanoseconds, which end in 2262, so a
// rule past it would fail every GCRA call of its batch, or, failing open,
// admit them all.
const maxSpan = 1 << 61

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
