package redisquota_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
	"github.com/admitgo/admit/quota/quotatest"
	"github.com/admitgo/admit/quota/redisquota"
)

// TestChargerBatched runs the shared behaviour with both instances
// batching, so that every call goes through pipelines, coalesced with the
// calls on its bucket that arrive with it.
// With OneServer, a pipeline's buckets go as one batch script run.
func TestChargerBatched(t *testing.T) {
	for _, one := range []bool{false, true} {
		t.Run(fmt.Sprint("OneServer ", one), func(t *testing.T) {
			quotatest.TestCharger(t, func(t *testing.T, cfg quotatest.Config) (first, second quota.Charger) {
				prefix := testredis.Prefix(t)
				c := redisquota.Config{Now: cfg.Now, Failure: cfg.Failure, Timeout: 5 * time.Second, Batch: 64, OneServer: one}
				first = newStore(t, testredis.Client(t), prefix, c)
				second = newStore(t, testredis.Client(t), prefix, c)
				return first, second
			})
		})
	}
}

// TestBatchingReplicasAreExact races 4 replicas of 50 callers each, every
// replica batching, coalescing and sending its pipelines as batch scripts
// (Config.OneServer), on one bucket: exactly the limit passes,
// by an injected clock and by the server's, and mixed costs on shared GCRA
// buckets fill each bucket to within one call of its burst.
func TestBatchingReplicasAreExact(t *testing.T) {
	for _, clock := range []struct {
		name string
		now  func() time.Time
	}{
		{"injected clock", func() time.Time { return t0 }},
		{"server clock", nil},
	} {
		t.Run(clock.name, func(t *testing.T) {
			prefix := testredis.Prefix(t)
			var stores []*redisquota.Store
			for range 4 {
				stores = append(stores, newStore(t, testredis.Client(t), prefix,
					redisquota.Config{Now: clock.now, Batch: 64, Timeout: 30 * time.Second, OneServer: true}))
			}
			// A limit per hour and calls that take well under the 24s a
			// token takes to refill.
			for _, rule := range []quota.Rule{
				{Name: "fw", Limit: 150, Window: time.Hour},
				{Name: "gcra", Limit: 150, Window: time.Hour, Algorithm: quota.TokenBucket},
			} {
				t.Run(rule.Algorithm.String(), func(t *testing.T) {
					for run := 0; ; run++ {
						c := testredis.Client(t)
						start := redisNow(t, c)
						got := raceStores(t, stores, rule, []int{1}, []string{quota.Subject(fmt.Sprint("hot ", run))})
						if end := redisNow(t, c); clock.now == nil && startsAnotherHour(start, end) {
							continue // a window rolled over under the server's clock
						}
						if got != rule.Limit {
							t.Errorf("%d passed, want %d", got, rule.Limit)
						}
						return
					}
				})
			}
			t.Run("mixed costs", func(t *testing.T) {
				rule := quota.Rule{Name: "mixed", Limit: 500, Window: time.Hour, Algorithm: quota.TokenBucket}
				subjects := []string{quota.Subject("p"), quota.Subject("q"), quota.Subject("r")}
				passed := raceStores(t, stores, rule, []int{1, 3, 2}, subjects)
				if passed > 3*rule.Limit || passed < 3*rule.Limit-6 {
					// Each bucket fills to within one costliest call of its
					// burst, and may gain a token or so of refill.
					t.Errorf("%d tokens passed across 3 buckets of %d, want within 6 of %d", passed, rule.Limit, 3*rule.Limit)
				}
			})
		})
	}
}

// startsAnotherHour reports whether a and b lie in different hours since
// the epoch.
func startsAnotherHour(a, b time.Time) bool {
	return !store.WindowStart(a, time.Hour).Equal(store.WindowStart(b, time.Hour))
}

// raceStores makes 10 calls from each of 200 goroutines spread over stores,
// goroutine i with cost costs[i%len(costs)], cycling through subjects, and
// returns the cost that passed. It fails t on any error.
func raceStores(t *testing.T, stores []*redisquota.Store, rule quota.Rule, costs []int, subjects []string) (passed int) {
	t.Helper()
	var (
		mu sync.Mutex // guards passed
		wg sync.WaitGroup
	)
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
