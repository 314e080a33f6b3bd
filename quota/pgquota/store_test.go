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
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

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

// TestAcrossInstances is four replicas, each with its own pool, racing 1,000
// calls on one bucket.
func TestAcrossInstances(t *testing.T) {
	db := testpg.New(t)
	clk := newClock(t0.Add(10 * time.Second))
	rule := quota.Rule{Name: "signup", Limit: 100, Window: time.Minute}
	subject := quota.Subject("203.0.113.7")
	var stores []*pgquota.Store
	for range 4 {
		stores = append(stores, newStore(t, db.Pool(t), pgquota.Config{Now: clk.Now, Timeout: generous}))
	}
	results := make(chan quota.Decision, 1000)
	var wg sync.WaitGroup
	for _, s := range stores {
		for range 50 {
			wg.Go(func() {
				for range 5 {
					d, err := s.Allow(context.Background(), rule, subject)
					if err != nil {
						t.Error(err)
						return
					}
					results <- d
				}
			})
		}
	}
	wg.Wait()
	close(results)
	seen := map[int]bool{}
	refused := 0
	for d := range results {
		if d.RetryAfter != 50*time.Second || d.Limit != 100 || d.Window != time.Minute {
			t.Errorf("decision %+v: want RetryAfter 50s, Limit 100, Window 1m", d)
		}
		if !d.Allowed {
			refused++
			if d.Remaining != 0 {
				t.Errorf("refused with Remaining %d, want 0", d.Remaining)
			}
			continue
		}
		// Each allowed call saw its own count, 1 to 100.
		if seen[d.Remaining] {
			t.Errorf("Remaining %d seen twice", d.Remaining)
		}
		seen[d.Remaining] = true
	}
	if len(seen) != 100 || refused != 900 {
		t.Errorf("allowed, refused: got %d, %d, want 100, 900", len(seen), refused)
	}
	var count int64
	err := db.Pool(t).QueryRow(context.Background(), "SELECT count FROM admit_quota").Scan(&count)
	if err != nil {
		t.Fatal(err)
	}
	if count != 1000 {
		t.Errorf("stored count: got %d, want 1000 (refused calls count)", count)
	}
}

func TestFixedWindowRollover(t *testing.T) {
	clk := newClock(t0.Add(10 * time.Second))
	s := newStore(t, testpg.New(t).Pool(t), pgquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "signup", Limit: 2, Window: time.Minute}
	subject := quota.Subject("203.0.113.7")
	steps := []struct {
		advance time.Duration
		n       int
		want    quota.Decision
	}{
		{0, 1, quota.Decision{Allowed: true, Remaining: 1, RetryAfter: 50 * time.Second, Limit: 2, Window: time.Minute}},
		{5 * time.Second, 0, quota.Decision{Allowed: true, Remaining: 1, RetryAfter: 45 * time.Second, Limit: 2, Window: time.Minute}},
		{0, 1, quota.Decision{Allowed: true, Remaining: 0, RetryAfter: 45 * time.Second, Limit: 2, Window: time.Minute}},
		{5 * time.Second, 1, quota.Decision{RetryAfter: 40 * time.Second, Limit: 2, Window: time.Minute}},
		{40*time.Second - time.Millisecond, 1, quota.Decision{RetryAfter: time.Millisecond, Limit: 2, Window: time.Minute}},
		{time.Millisecond, 1, quota.Decision{Allowed: true, Remaining: 1, RetryAfter: time.Minute, Limit: 2, Window: time.Minute}},
		{30 * time.Second, 2, quota.Decision{RetryAfter: 30 * time.Second, Limit: 2, Window: time.Minute}},
		{0, 0, quota.Decision{RetryAfter: 30 * time.Second, Limit: 2, Window: time.Minute}},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if got := allowN(t, s, rule, subject, st.n); got != st.want {
			t.Errorf("step %d (t0+%v, n=%d): got %+v, want %+v", i, clk.Now().Sub(t0), st.n, got, st.want)
		}
	}
}

// TestMatchesModel drives the store and the package's arithmetic with the
// same random calls, sweeping now and then; every decision must be identical.
func TestMatchesModel(t *testing.T) {
	db := testpg.New(t)
	pool := db.Pool(t)
	rules := []quota.Rule{
		{Name: "fw", Limit: 5, Window: 2 * time.Second},
		{Name: "fw-odd", Limit: 3, Window: 1700 * time.Millisecond},
		{Name: "gcra", Limit: 5, Window: 2 * time.Second, Algorithm: quota.GCRA},
		{Name: "gcra-burst", Limit: 10, Window: time.Second, Algorithm: quota.GCRA, Burst: 3},
		{Name: "gcra-thirds", Limit: 3, Window: time.Second, Algorithm: quota.GCRA, Burst: 2},
	}
	for _, rule := range rules {
		t.Run(rule.Name, func(t *testing.T) {
			clk := newClock(t0)
			s := newStore(t, pool, pgquota.Config{Now: clk.Now, Timeout: generous})
			var m model
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
				want := m.allowN(rule, clk.Now(), n)
				if got := allowN(t, s, rule, subject, n); got != want {
					t.Fatalf("call %d (t0+%v, n=%d): got %+v, want %+v", i, clk.Now().Sub(t0), n, got, want)
				}
			}
		})
	}
}

func TestLooksWriteNothing(t *testing.T) {
	pool := testpg.New(t).Pool(t)
	s := newStore(t, pool, pgquota.Config{Now: newClock(t0).Now})
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.GCRA} {
		rule := quota.Rule{Name: alg.String(), Limit: 2, Window: time.Minute, Algorithm: alg}
		if d := allowN(t, s, rule, quota.Subject("new"), 0); !d.Allowed || d.Remaining != 2 {
			t.Errorf("%v look at a new bucket: got %+v, want allowed with 2 remaining", alg, d)
		}
		allowN(t, s, rule, quota.Subject("used"), 1)
		for range 3 {
			if d := allowN(t, s, rule, quota.Subject("used"), 0); !d.Allowed || d.Remaining != 1 {
				t.Errorf("%v look at a used bucket: got %+v, want allowed with 1 remaining", alg, d)
			}
		}
	}
	if got := rows(t, pool, "true"); got != 2 {
		t.Errorf("rows: got %d, want 2 (looks create none)", got)
	}
}

func TestGCRABurstThenSteady(t *testing.T) {
	clk := newClock(t0)
	s := newStore(t, testpg.New(t).Pool(t), pgquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "login", Limit: 60, Window: time.Minute, Algorithm: quota.GCRA, Burst: 5}
	subject := quota.Subject("user@example.com")
	allowed := 0
	for range 8 {
		if allowN(t, s, rule, subject, 1).Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("burst: got %d allowed, want 5", allowed)
	}
	for i := range 5 {
		clk.Advance(time.Second)
		if d := allowN(t, s, rule, subject, 1); !d.Allowed {
			t.Errorf("second %d: got %+v, want allowed", i+1, d)
		}
		if d := allowN(t, s, rule, subject, 1); d.Allowed || d.RetryAfter != time.Second {
			t.Errorf("second %d, again: got %+v, want refused with RetryAfter 1s", i+1, d)
		}
	}
}

func TestGCRARefusedKeepsTat(t *testing.T) {
	pool := testpg.New(t).Pool(t)
	s := newStore(t, pool, pgquota.Config{Now: newClock(t0).Now})
	rule := quota.Rule{Name: "r", Limit: 1, Window: time.Minute, Algorithm: quota.GCRA}
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

// TestGCRAAcrossInstances is four replicas racing on one GCRA bucket: the
// burst, then exactly the tokens that refill, whoever asks.
func TestGCRAAcrossInstances(t *testing.T) {
	db := testpg.New(t)
	clk := newClock(t0)
	rule := quota.Rule{Name: "door", Limit: 3600, Window: time.Hour, Algorithm: quota.GCRA, Burst: 100}
	subject := quota.Subject("203.0.113.7")
	var stores []*pgquota.Store
	for range 4 {
		stores = append(stores, newStore(t, db.Pool(t), pgquota.Config{Now: clk.Now, Timeout: generous}))
	}
	race := func(calls int) (allowed []quota.Decision) {
		t.Helper()
		results := make(chan quota.Decision, calls)
		var wg sync.WaitGroup
		for i := range 200 {
			s := stores[i%4]
			wg.Go(func() {
				for range calls / 200 {
					d, err := s.Allow(context.Background(), rule, subject)
					if err != nil {
						t.Error(err)
						return
					}
					results <- d
				}
			})
		}
		wg.Wait()
		close(results)
		for d := range results {
			if d.Allowed {
				allowed = append(allowed, d)
			}
		}
		return allowed
	}
	burst := race(1000)
	if len(burst) != 100 {
		t.Fatalf("burst: got %d allowed, want 100", len(burst))
	}
	seen := map[int]bool{}
	for _, d := range burst {
		if seen[d.Remaining] {
			t.Errorf("Remaining %d seen twice", d.Remaining)
		}
		seen[d.Remaining] = true
	}
	clk.Advance(10 * time.Second) // ten tokens at one a second
	if got := len(race(400)); got != 10 {
		t.Errorf("after 10s: got %d allowed, want 10", got)
	}
}

func TestSubjects(t *testing.T) {
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
	}
	for _, failOpen := range []bool{false, true} {
		s := newStore(t, pool, pgquota.Config{FailOpen: failOpen, MeterProvider: mp})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				d, err := s.Allow(context.Background(), tt.rule, tt.subject)
				if !errors.Is(err, tt.want) {
					t.Errorf("FailOpen=%v: error: got %v, want %v", failOpen, err, tt.want)
				}
				if d.Allowed {
					t.Errorf("FailOpen=%v: got %+v, want refused", failOpen, d)
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
		{Name: "gcra", Limit: 2, Window: time.Minute, Algorithm: quota.GCRA},
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+ln.Addr().String()+"/test?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return pool
}

func TestFailurePolicy(t *testing.T) {
	rule := quota.Rule{Name: "r", Limit: 7, Window: time.Minute}
	gcra := quota.Rule{Name: "g", Limit: 7, Window: time.Minute, Algorithm: quota.GCRA}
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
		name     string
		failOpen bool
		want     func(quota.Rule) quota.Decision
		outcome  string
	}{
		{"fail closed", false, func(r quota.Rule) quota.Decision {
			return quota.Decision{RetryAfter: r.Window, Limit: r.Limit, Window: r.Window}
		}, "postgres/failed_closed"},
		{"fail open", true, func(r quota.Rule) quota.Decision {
			return quota.Decision{Allowed: true, Remaining: r.Limit, Limit: r.Limit, Window: r.Window}
		}, "postgres/failed_open"},
	}
	for _, srv := range servers {
		for _, p := range policies {
			t.Run(srv.name+"/"+p.name, func(t *testing.T) {
				mp, read := meter(t)
				s, err := pgquota.New(srv.pool(t), pgquota.Config{FailOpen: p.failOpen, Timeout: timeout, MeterProvider: mp})
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
