package pgquota_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/quotatest"
)

// TestCharger runs the behaviour every store shares; each subtest gets a
// schema of its own, and its second instance a pool of its own, as another
// replica would have.
func TestCharger(t *testing.T) {
	quotatest.TestCharger(t, func(t *testing.T, cfg quotatest.Config) (first, second quota.Charger) {
		db := testpg.New(t)
		c := pgquota.Config{Now: cfg.Now, Failure: cfg.Failure, Timeout: generous}
		return newStore(t, db.Pool(t), c), newStore(t, db.Pool(t), c)
	})
}

// TestChargerBatched runs the same behaviour with batching on, so that a
// batch of one decides as a lone statement does and the races below run
// through the batcher.
func TestChargerBatched(t *testing.T) {
	quotatest.TestCharger(t, func(t *testing.T, cfg quotatest.Config) (first, second quota.Charger) {
		db := testpg.New(t)
		c := pgquota.Config{Now: cfg.Now, Failure: cfg.Failure, Timeout: generous, Batch: 64}
		a, b := newStore(t, db.Pool(t), c), newStore(t, db.Pool(t), c)
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	})
}

func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestNewValidatesConfig(t *testing.T) {
	pool := unreachable(t) // New must not need the database
	tests := []struct {
		name    string
		cfg     pgquota.Config
		wantErr bool
	}{
		{"zero", pgquota.Config{}, false},
		{"table", pgquota.Config{Table: "limits"}, false},
		{"schema-qualified", pgquota.Config{Table: "quota.limits_2"}, false},
		{"48 bytes", pgquota.Config{Table: strings.Repeat("t", 48)}, false},
		{"49 bytes", pgquota.Config{Table: strings.Repeat("t", 49)}, true},
		{"uppercase", pgquota.Config{Table: "Limits"}, true},
		{"leading digit", pgquota.Config{Table: "1limits"}, true},
		{"three parts", pgquota.Config{Table: "a.b.c"}, true},
		{"empty schema", pgquota.Config{Table: ".limits"}, true},
		{"empty table", pgquota.Config{Table: "quota."}, true},
		{"quoted", pgquota.Config{Table: `"limits"`}, true},
		{"injection", pgquota.Config{Table: "t; DROP TABLE users"}, true},
		{"hyphen", pgquota.Config{Table: "my-limits"}, true},
		{"negative timeout", pgquota.Config{Timeout: -time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pgquota.New(pool, tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%+v): got %v, want error %v", tt.cfg, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, pgquota.ErrConfig) {
				t.Errorf("New: got %v, want it to wrap ErrConfig", err)
			}
		})
	}
	if _, err := pgquota.New(nil, pgquota.Config{}); !errors.Is(err, pgquota.ErrConfig) {
		t.Errorf("New(nil pool): got %v, want ErrConfig", err)
	}
}

func TestMigrate(t *testing.T) {
	db := testpg.New(t)
	pool := db.Pool(t)
	ctx := context.Background()
	s, err := pgquota.New(pool, pgquota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Replicas starting together all migrate.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := s.Migrate(ctx); err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		})
	}
	wg.Wait()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	var opts []string
	err = pool.QueryRow(ctx, `SELECT reloptions FROM pg_class WHERE oid = $1::regclass`, db.Schema+".admit_quota").Scan(&opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(opts, ",") != "fillfactor=70" {
		t.Errorf("reloptions: got %v, want [fillfactor=70]", opts)
	}
	var indexes []string
	err = pool.QueryRow(ctx, `SELECT array_agg(indexdef ORDER BY indexname) FROM pg_indexes WHERE schemaname = $1 AND tablename = 'admit_quota'`, db.Schema).Scan(&indexes)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"(expires_at)", "(bucket, window_start)"}
	if len(indexes) != len(want) {
		t.Fatalf("indexes: got %q, want %d", indexes, len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(indexes[i], w) {
			t.Errorf("index %d: got %q, want it on %s", i, indexes[i], w)
		}
	}
}

func TestMigrateSchemaQualified(t *testing.T) {
	db := testpg.New(t)
	cfg := db.Config(t)
	delete(cfg.ConnConfig.RuntimeParams, "search_path") // the name alone must find the table
	pool := db.Open(t, cfg)
	s := newStore(t, pool, pgquota.Config{Table: db.Schema + ".limits", Now: newClock(t0).Now})
	rule := quota.Rule{Name: "r", Limit: 1, Window: time.Minute}
	if d := allowN(t, s, rule, quota.Subject("x"), 1); !d.Allowed {
		t.Errorf("first call: got %+v, want allowed", d)
	}
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+db.Schema+".limits").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("rows in %s.limits: got %d, want 1", db.Schema, n)
	}
	if !strings.Contains(s.Schema(), `"`+db.Schema+`"."limits"`) || !strings.Contains(s.Schema(), `"limits_expires_at_idx"`) {
		t.Errorf("Schema() does not name the configured table and index:\n%s", s.Schema())
	}
}

// TestSchemaHeader: the SQL printed for a table opens with a comment naming
// it as configured; the name is replaced in the statements, never in prose.
func TestSchemaHeader(t *testing.T) {
	for _, table := range []string{"", "quota.my_q", "limits"} {
		sql, err := pgquota.Schema(table)
		if err != nil {
			t.Fatalf("Schema(%q): %v", table, err)
		}
		name := table
		if name == "" {
			name = pgquota.DefaultTable
		}
		header, _, _ := strings.Cut(sql, "\nCREATE ")
		want := "-- The table and index of the admit PostgreSQL quota store, for the table\n-- " + name +
			". Safe to run again: each statement creates only what is missing."
		if header != want {
			t.Errorf("Schema(%q) opens with\n%s\nwant\n%s", table, header, want)
		}
	}
}

// TestStoredCount is four replicas, each with its own pool, racing 1,000
// calls on one bucket: the row counts every one of them, refused ones too.
// The decisions are the suite's (AcrossInstances).
func TestStoredCount(t *testing.T) {
	db := testpg.New(t)
	clk := newClock(t0.Add(10 * time.Second))
	rule := quota.Rule{Name: "signup", Limit: 100, Window: time.Minute}
	subject := quota.Subject("203.0.113.7")
	var stores []*pgquota.Store
	for range 4 {
		stores = append(stores, newStore(t, db.Pool(t), pgquota.Config{Now: clk.Now, Timeout: generous}))
	}
	var wg sync.WaitGroup
	for _, s := range stores {
		for range 50 {
			wg.Go(func() {
				for range 5 {
					if _, err := s.Allow(context.Background(), rule, subject); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	var count int64
	err := db.Pool(t).QueryRow(context.Background(), "SELECT count FROM admit_quota").Scan(&count)
	if err != nil {
		t.Fatal(err)
	}
	if count != 1000 {
		t.Errorf("stored count: got %d, want 1000 (refused calls count)", count)
	}
}

// TestSweepsChangeNoDecision drives the store and the shared arithmetic with
// the same random calls, sweeping now and then; every decision must be
// identical. Random calls without sweeps are the suite's (MatchesModel).
func TestSweepsChangeNoDecision(t *testing.T) {
	db := testpg.New(t)
	pool := db.Pool(t)
	rules := []quota.Rule{
		{Name: "fw", Limit: 5, Window: 2 * time.Second},
		{Name: "fw-odd", Limit: 3, Window: 1700 * time.Millisecond},
		{Name: "gcra", Limit: 5, Window: 2 * time.Second, Algorithm: quota.TokenBucket},
		{Name: "gcra-burst", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 3},
		{Name: "gcra-thirds", Limit: 3, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 2},
	}
	for _, rule := range rules {
		t.Run(rule.Name, func(t *testing.T) {
			clk := newClock(t0)
			s := newStore(t, pool, pgquota.Config{Now: clk.Now, Timeout: generous})
			var m store.Model
			subject := quota.Subject(rule.Name)
			r := rand.New(rand.NewPCG(5, 6))
			for i := range 300 {
				clk.Advance(time.Duration(r.Int64N(int64(rule.Window / 4))))
				if r.IntN(20) == 0 {
					if _, err := s.Sweep(context.Background(), 0); err != nil {
						t.Fatalf("Sweep: %v", err)
					}
				}
				n := r.IntN(4)
				want := m.AllowN(rule, clk.Now(), n)
				if got := allowN(t, s, rule, subject, n); got != want {
					t.Fatalf("call %d (t0+%v, n=%d): got %+v, want %+v", i, clk.Now().Sub(t0), n, got, want)
				}
			}
		})
	}
}

// TestLooksWriteNoRows checks that a look is a plain SELECT: what looks
// decide is the suite's (LooksSpendNothing).
func TestLooksWriteNoRows(t *testing.T) {
	pool := testpg.New(t).Pool(t)
	s := newStore(t, pool, pgquota.Config{Now: newClock(t0).Now})
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		rule := quota.Rule{Name: alg.String(), Limit: 2, Window: time.Minute, Algorithm: alg}
		allowN(t, s, rule, quota.Subject("new"), 0)
		allowN(t, s, rule, quota.Subject("used"), 1)
		for range 3 {
			allowN(t, s, rule, quota.Subject("used"), 0)
		}
	}
	if got := rows(t, pool, "true"); got != 2 {
		t.Errorf("rows: got %d, want 2 (looks create none)", got)
	}
}

// TestGCRARefusedKeepsTat checks the tat column; that refused calls cost
// nothing is the suite's (RefusedGCRAKeepsBucket).
func TestGCRARefusedKeepsTat(t *testing.T) {
	pool := testpg.New(t).Pool(t)
	s := newStore(t, pool, pgquota.Config{Now: newClock(t0).Now})
	rule := quota.Rule{Name: "r", Limit: 1, Window: time.Minute, Algorithm: quota.TokenBucket}
	subject := quota.Subject("x")
	tat := func() (v int64) {
		t.Helper()
		if err := pool.QueryRow(context.Background(), "SELECT tat FROM admit_quota").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	allowN(t, s, rule, subject, 1)
	before := tat()
	if want := t0.Add(time.Minute).UnixNano(); before != want {
		t.Errorf("tat after one call: got %d, want %d", before, want)
	}
	for range 3 {
		if d := allowN(t, s, rule, subject, 1); d.Allowed {
			t.Fatalf("second call: got %+v, want refused", d)
		}
	}
	if after := tat(); after != before {
		t.Errorf("tat after refused calls: got %d, want %d", after, before)
	}
}

// TestCallerErrors checks this store's own limit on rule names, and that
// no caller error writes a row or counts as a decision; the rest of caller
// errors is the suite's (CallerErrors, SubjectsFromSubjectOnly).
func TestCallerErrors(t *testing.T) {
	pool := testpg.New(t).Pool(t)
	mp, read := meter(t)
	ok := quota.Rule{Name: "r", Limit: 5, Window: time.Minute}
	tests := []struct {
		name    string
		rule    quota.Rule
		subject string
		want    error
	}{
		{"raw ip", ok, "203.0.113.7", quota.ErrSubject},
		{"raw email", ok, "someone@example.com", quota.ErrSubject},
		{"raw token", ok, "sk_live_0123456789abcdef01234567", quota.ErrSubject},
		{"uppercase subject", ok, strings.ToUpper(quota.Subject("x")), quota.ErrSubject},
		{"zero rule", quota.Rule{}, quota.Subject("x"), quota.ErrRule},
		{"NUL in name", quota.Rule{Name: "a\x00b", Limit: 1, Window: time.Second}, quota.Subject("x"), quota.ErrRule},
		{"invalid UTF-8 name", quota.Rule{Name: "a\xffb", Limit: 1, Window: time.Second}, quota.Subject("x"), quota.ErrRule},
		// A burst of 200 years: the statements' nanoseconds would pass
		// bigint's range, failing every GCRA call of the batch.
		{"GCRA span past the clock's range", quota.Rule{Name: "long", Limit: 1, Window: 200 * 365 * 24 * time.Hour, Algorithm: quota.TokenBucket}, quota.Subject("x"), quota.ErrRule},
		{"GCRA burst past the clock's range", quota.Rule{Name: "wide", Limit: 1, Window: 24 * time.Hour, Algorithm: quota.TokenBucket, Burst: 30_000}, quota.Subject("x"), quota.ErrRule},
	}
	for _, failure := range []quota.Failure{quota.FailClosed, quota.FailOpen} {
		s := newStore(t, pool, pgquota.Config{Failure: failure, MeterProvider: mp})
		failOpen := failure == quota.FailOpen
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				d, err := s.Allow(context.Background(), tt.rule, tt.subject)
				if !errors.Is(err, tt.want) {
					t.Errorf("fail open %v: error: got %v, want %v", failOpen, err, tt.want)
				}
				if d.Allowed {
					t.Errorf("fail open %v: got %+v, want refused", failOpen, d)
				}
				if err := s.CheckRule(tt.rule); tt.want == quota.ErrRule && !errors.Is(err, quota.ErrRule) {
					t.Errorf("CheckRule: got %v, want %v", err, quota.ErrRule)
				}
				if err != nil && tt.subject != quota.Subject("x") && strings.Contains(err.Error(), tt.subject) {
					t.Errorf("error %q repeats the raw subject", err)
				}
			})
		}
	}
	if got := rows(t, pool, "true"); got != 0 {
		t.Errorf("rows after caller errors: got %d, want 0", got)
	}
	if decisions, _ := read(); len(decisions) != 0 {
		t.Errorf("decisions counted: got %v, want none", decisions)
	}
}

func TestMetrics(t *testing.T) {
	mp, read := meter(t)
	s := newStore(t, testpg.New(t).Pool(t), pgquota.Config{Now: newClock(t0).Now, MeterProvider: mp})
	for _, rule := range []quota.Rule{
		{Name: "fw", Limit: 2, Window: time.Minute},
		{Name: "gcra", Limit: 2, Window: time.Minute, Algorithm: quota.TokenBucket},
	} {
		for range 3 {
			allowN(t, s, rule, quota.Subject("x"), 1)
		}
	}
	decisions, latencies := read()
	want := map[string]int64{"postgres/allowed": 4, "postgres/refused": 2}
	if !sameCounts(decisions, want) {
		t.Errorf("decisions: got %v, want %v", decisions, want)
	}
	if latencies != 6 {
		t.Errorf("latency samples: got %d, want 6", latencies)
	}
}

// silentServer accepts connections and never answers, like a server that
// hangs or a network that drops packets.
func silentServer(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+testserver.Silent(t)+"/test?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestFailurePolicy(t *testing.T) {
	rule := quota.Rule{Name: "r", Limit: 7, Window: time.Minute}
	gcra := quota.Rule{Name: "g", Limit: 7, Window: time.Minute, Algorithm: quota.TokenBucket}
	const timeout = 200 * time.Millisecond
	// The bound allows for a loaded machine; the silent server would hold a
	// call forever without the timeout.
	const bound = timeout + 2*time.Second
	servers := []struct {
		name string
		pool func(*testing.T) *pgxpool.Pool
	}{
		{"closed port", unreachable},
		{"silent server", silentServer},
	}
	policies := []struct {
		name    string
		failure quota.Failure
		want    func(quota.Rule) quota.Decision
		outcome string
	}{
		{"fail closed", quota.FailClosed, func(r quota.Rule) quota.Decision {
			return quota.Decision{RetryAfter: r.Window, Limit: r.Limit, Window: r.Window}
		}, "postgres/failed_closed"},
		{"fail open", quota.FailOpen, func(r quota.Rule) quota.Decision {
			return quota.Decision{Allowed: true, Remaining: r.Limit, Limit: r.Limit, Window: r.Window}
		}, "postgres/failed_open"},
	}
	for _, srv := range servers {
		for _, p := range policies {
			t.Run(srv.name+"/"+p.name, func(t *testing.T) {
				mp, read := meter(t)
				s, err := pgquota.New(srv.pool(t), pgquota.Config{Failure: p.failure, Timeout: timeout, MeterProvider: mp})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				for _, r := range []quota.Rule{rule, gcra} {
					for _, n := range []int{1, 0} {
						start := time.Now()
						d, err := s.AllowN(context.Background(), r, quota.Subject("x"), n)
						if elapsed := time.Since(start); elapsed > bound {
							t.Errorf("%v n=%d took %v, want at most %v", r.Algorithm, n, elapsed, bound)
						}
						if err == nil {
							t.Errorf("%v n=%d: got no error, want the store's", r.Algorithm, n)
						} else if !strings.HasPrefix(err.Error(), "pgquota: ") {
							t.Errorf("error %q: want the package prefix", err)
						}
						if want := p.want(r); d != want {
							t.Errorf("%v n=%d: got %+v, want %+v", r.Algorithm, n, d, want)
						}
					}
				}
				if decisions, _ := read(); !sameCounts(decisions, map[string]int64{p.outcome: 4}) {
					t.Errorf("decisions: got %v, want %s: 4", decisions, p.outcome)
				}
			})
		}
	}
}

func TestDefaultTimeoutBoundsCalls(t *testing.T) {
	s, err := pgquota.New(silentServer(t), pgquota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := s.Allow(context.Background(), quota.Rule{Limit: 1, Window: time.Second}, quota.Subject("x"))
	if err == nil || d.Allowed {
		t.Errorf("got %+v, %v, want refused with an error", d, err)
	}
	if elapsed := time.Since(start); elapsed < pgquota.DefaultTimeout || elapsed > pgquota.DefaultTimeout+2*time.Second {
		t.Errorf("call took %v, want about %v", elapsed, pgquota.DefaultTimeout)
	}
}
