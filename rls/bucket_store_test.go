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

// TestBucketRedis refills client's bucket in the Redis store, under a key
// prefix of this test's, on the injected clock.
func TestBucketRedis(t *testing.T) {
	clock := testclock.New(time.Unix(1_699_999_990, 0))
	st, err := redisquota.New(testredis.Client(t), redisquota.Config{Prefix: testredis.Prefix(t), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixtureOn(t, clock, rls.Options{Config: parseBuckets(t), Limiter: st})
	play(t, f, clock, desc("client", "ann"), refillSteps)
}

// TestBucketPostgres refills client's bucket in the PostgreSQL store, in a
// table of this test's schema, on the injected clock.
func TestBucketPostgres(t *testing.T) {
	clock := testclock.New(time.Unix(1_699_999_990, 0))
	db := testpg.New(t)
	st, err := pgquota.New(db.Pool(t), pgquota.Config{Table: db.Schema + ".admit_quota", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, clock, rls.Options{Config: parseBuckets(t), Limiter: st})
	play(t, f, clock, desc("client", "ann"), refillSteps)
}
