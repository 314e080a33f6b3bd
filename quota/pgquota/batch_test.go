package pgquota

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func migrated(t *testing.T, db *testpg.DB, cfg Config) *Store {
	t.Helper()
	s, err := New(db.Pool(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRoundsMatchModel decides random batches straight through decide, the
// path every batch takes, and wants each call's decision to be the one it
// would have had alone, in arrival order: calls on one bucket coalesced,
// fixed windows and GCRA buckets of the same name apart, looks, costs that
// change within a batch (which split a round) and costs above the burst.
func TestRoundsMatchModel(t *testing.T) {
	db := testpg.New(t)
	now := t0
	s := migrated(t, db, Config{Now: func() time.Time { return now }, Timeout: 30 * time.Second})
	rules := []quota.Rule{
		{Name: "a", Limit: 5, Window: time.Second},
		{Name: "a", Limit: 5, Window: time.Second, Algorithm: quota.TokenBucket},
		{Name: "b", Limit: 7, Window: 3 * time.Second, Algorithm: quota.TokenBucket, Burst: 3},
		{Name: "c", Limit: 3, Window: 2 * time.Second},
	}
	subjects := []string{quota.Subject("x"), quota.Subject("y")}
	models := map[string]*store.Model{}
	rng := rand.New(rand.NewPCG(1, 2))
	for batch := range 300 {
		calls := make([]*call, 1+rng.IntN(24))
		for i := range calls {
			rule, subject := rules[rng.IntN(len(rules))], subjects[rng.IntN(len(subjects))]
			calls[i] = &call{rule: rule, bucket: rule.Name + ":" + subject, n: rng.IntN(5)}
		}
		s.decide(context.Background(), calls)
		for i, c := range calls {
			if c.err != nil {
				t.Fatalf("batch %d call %d: %v", batch, i, c.err)
			}
			key := fmt.Sprint(c.rule.Algorithm, c.bucket)
			if models[key] == nil {
				models[key] = &store.Model{}
			}
			if want := models[key].AllowN(c.rule, now, c.n); c.d != want {
				t.Fatalf("batch %d call %d (%s %s n=%d at t0+%v): got %+v, want %+v",
					batch, i, c.rule.Algorithm, c.bucket, c.n, now.Sub(t0), c.d, want)
			}
		}
		now = now.Add(time.Duration(rng.IntN(700)) * time.Millisecond)
	}
}

// TestSplit keeps each GCRA bucket to one cost per round, and every call
// in arrival order per bucket.
func TestSplit(t *testing.T) {
	g := quota.Rule{Name: "g", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket}
	f := quota.Rule{Name: "f", Limit: 10, Window: time.Second}
	calls := []*call{
		{rule: g, bucket: "g:1", n: 1},
		{rule: f, bucket: "f:1", n: 3},
		{rule: g, bucket: "g:1", n: 0},
		{rule: g, bucket: "g:1", n: 2}, // another cost: this and the rest of g:1 wait
		{rule: g, bucket: "g:2", n: 2},
		{rule: g, bucket: "g:1", n: 1},
		{rule: f, bucket: "f:1", n: 1},
	}
	round, later := split(calls)
	want := []*call{calls[0], calls[1], calls[2], calls[4], calls[6]}
	if fmt.Sprint(round) != fmt.Sprint(want) {
		t.Errorf("round: got %v, want %v", round, want)
	}
	if want := []*call{calls[3], calls[5]}; fmt.Sprint(later) != fmt.Sprint(want) {
		t.Errorf("later: got %v, want %v", later, want)
	}
}

// TestBatchingReplicasAreExact races 4 replicas of 50 callers each, every
// replica batching, on one bucket: exactly the limit passes, and mixed
// costs on shared GCRA buckets never deadlock two batches.
func TestBatchingReplicasAreExact(t *testing.T) {
	db := testpg.New(t)
	clock := func() time.Time { return t0 }
	var stores []*Store
	for range 4 {
		stores = append(stores, migrated(t, db, Config{Now: clock, Batch: 64, Timeout: 30 * time.Second}))
	}
	race := func(t *testing.T, rule quota.Rule, costs []int, subjects []string) (passed int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 200 {
			s := stores[i%len(stores)]
			wg.Go(func() {
				for j := range 10 {
					n := costs[i%len(costs)]
					d, err := s.AllowN(context.Background(), rule, subjects[j%len(subjects)], n)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						mu.Lock()
						passed += n
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		return passed
	}
	for _, rule := range []quota.Rule{
		{Name: "fw", Limit: 150, Window: time.Hour},
		{Name: "gcra", Limit: 150, Window: time.Hour, Algorithm: quota.TokenBucket},
	} {
		t.Run(rule.Algorithm.String(), func(t *testing.T) {
			if got := race(t, rule, []int{1}, []string{quota.Subject("hot")}); got != rule.Limit {
				t.Errorf("one cost: %d passed, want %d", got, rule.Limit)
			}
		})
	}
	t.Run("mixed costs", func(t *testing.T) {
		rule := quota.Rule{Name: "mixed", Limit: 500, Window: time.Hour, Algorithm: quota.TokenBucket}
		subjects := []string{quota.Subject("p"), quota.Subject("q"), quota.Subject("r")}
		passed := race(t, rule, []int{1, 3, 2}, subjects)
		if passed > 3*rule.Limit || passed < 3*rule.Limit-3 {
			// Each bucket fills to within one costliest call of its burst.
			t.Errorf("%d tokens passed across 3 buckets of %d, want within 3 of %d", passed, rule.Limit, 3*rule.Limit)
		}
	})
}

// TestDatabaseClock decides by the database's clock when Config.Now is nil:
// a fixed window's RetryAfter ends the window that holds the database's
// now(), read around the call.
func TestDatabaseClock(t *testing.T) {
	db := testpg.New(t)
	s := migrated(t, db, Config{})
	pool := db.Pool(t)
	rule := quota.Rule{Name: "clock", Limit: 5, Window: time.Hour}
	dbNow := func() time.Time {
		var ts time.Time
		if err := pool.QueryRow(context.Background(), "SELECT clock_timestamp()").Scan(&ts); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	var before, after time.Time
	var d quota.Decision
	for {
		before = dbNow()
		var err error
		d, err = s.Allow(context.Background(), rule, quota.Subject("c"))
		after = dbNow()
		if err != nil || !d.Allowed {
			t.Fatalf("Allow: %+v, %v", d, err)
		}
		// A call that straddled the hour has no one window to check; the
		// next one will not.
		if store.WindowStart(after, time.Hour) == store.WindowStart(before, time.Hour) {
			break
		}
	}
	end := store.WindowStart(before, time.Hour).Add(time.Hour)
	// The decision's time lies between before and after.
	if lo, hi := end.Sub(after), end.Sub(before); d.RetryAfter < lo || d.RetryAfter > hi {
		t.Errorf("RetryAfter %v, want within [%v, %v] of the database's clock", d.RetryAfter, lo, hi)
	}
}
