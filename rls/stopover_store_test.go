package rls_test

import (
	"context"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/rls"
)

// sharedCounters open the shared stores' counters on clock: Redis under a
// key prefix of the test's, PostgreSQL in a table of its schema.
var sharedCounters = []struct {
	name string
	open func(t *testing.T, clock *testclock.Clock) rls.Counter
}{
	{"redis", func(t *testing.T, clock *testclock.Clock) rls.Counter {
		c, err := redisquota.NewCounter(testredis.Client(t), redisquota.CounterConfig{Prefix: testredis.Prefix(t), Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
	{"postgres", func(t *testing.T, clock *testclock.Clock) rls.Counter {
		db := testpg.New(t)
		table := db.Schema + ".admit_quota"
		st, err := pgquota.New(db.Pool(t), pgquota.Config{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		c, err := pgquota.NewCounter(db.Pool(t), pgquota.CounterConfig{Table: table, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
}

// TestStopIncrementAndLocalCacheStores plays the requests of
// TestStopIncrementOverLimit and TestLocalCacheBesideCounted on the shared
// stores: a request one limit refuses leaves the other's count, and the
// descriptor over its limit is answered from the cache without a call.
func TestStopIncrementAndLocalCacheStores(t *testing.T) {
	for _, st := range sharedCounters {
		t.Run(st.name, func(t *testing.T) {
			clock := testclock.New(time.Unix(1_699_999_990, 0))
			c := &watched{Counter: st.open(t, clock)}
			f := newFixtureOn(t, clock, rls.Options{Counter: c, Now: clock.Now, StopIncrementOverLimit: true, LocalCacheBytes: 1 << 20})
			playMulti(t, f, []multiStep{
				{0, userAndTenant, []answer{{ok, 1, 50}, {ok, 99, resetDay}}, ok},
				{0, userAndTenant, []answer{{ok, 0, 50}, {ok, 98, resetDay}}, ok},
				{0, userAndTenant, []answer{{over, 0, 50}, {ok, 98, resetDay}}, over},
				{0, tenantOnly, []answer{{ok, 97, resetDay}}, ok},
			})
			asks(t, c, 8)
			// user is now cached: the request reads tenant, counting nothing.
			playMulti(t, f, []multiStep{
				{0, userAndTenant, []answer{{over, 0, 50}, {ok, 97, resetDay}}, over},
				{0, user, []answer{{over, 0, 50}}, over},
				{0, tenantOnly, []answer{{ok, 96, resetDay}}, ok},
			})
			asks(t, c, 11)
		})
	}
}
