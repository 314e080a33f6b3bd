package redisquota_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
	"github.com/admitgo/admit/quota/redisquota"
)

// redisNow reads the Redis server's clock.
func redisNow(t *testing.T, c *redis.Client) time.Time {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

// TestStoreClock decides by the server's clock when Config.Now is nil, even
// where the process's clock is decades off (a testing/synctest bubble's
// reads 2000-01-01): a fixed window's RetryAfter ends the window that holds
// the server's time, read around the call, and a GCRA bucket's stored tat
// is that time plus the call's cost.
func TestStoreClock(t *testing.T) {
	c := testredis.Client(t)
	prefix := testredis.Prefix(t)
	// The store is made in the bubble, so that a batching store's flusher
	// lives there too.
	open := func(t *testing.T, batch int) *redisquota.Store {
		return newStore(t, c, prefix, redisquota.Config{Batch: batch})
	}
	for _, batch := range []int{0, 8} {
		t.Run(fmt.Sprintf("fixed window, Batch %d", batch), func(t *testing.T) {
			rule := quota.Rule{Name: fmt.Sprint("clock", batch), Limit: 5, Window: time.Hour}
			synctest.Test(t, func(t *testing.T) {
				s := open(t, batch)
				for i := 0; ; i++ {
					before := redisNow(t, c)
					d := decide(t, s, rule, quota.Subject(fmt.Sprint(i)), 1)
					after := redisNow(t, c)
					// A call that straddled the hour has no one window to
					// check; the next one will not.
					if !store.WindowStart(after, time.Hour).Equal(store.WindowStart(before, time.Hour)) {
						continue
					}
					end := store.WindowStart(before, time.Hour).Add(time.Hour)
					if lo, hi := end.Sub(after), end.Sub(before); d.RetryAfter < lo || d.RetryAfter > hi {
						t.Errorf("RetryAfter %v, want within [%v, %v] of the server's clock (the process reads %v)", d.RetryAfter, lo, hi, time.Now())
					}
					return
				}
			})
		})
		t.Run(fmt.Sprintf("gcra, Batch %d", batch), func(t *testing.T) {
			rule := quota.Rule{Name: fmt.Sprint("clock", batch), Limit: 60, Window: time.Hour, Algorithm: quota.TokenBucket}
			subject := quota.Subject("gcra")
			synctest.Test(t, func(t *testing.T) {
				s := open(t, batch)
				before := redisNow(t, c)
				decide(t, s, rule, subject, 3) // three minutes' worth
				after := redisNow(t, c)
				v, err := c.Get(context.Background(), gcraKey(prefix, rule.Name, subject)).Result()
				if err != nil {
					t.Fatal(err)
				}
				var sec, nsec int64
				if _, err := fmt.Sscanf(v, "%d:%d", &sec, &nsec); err != nil {
					t.Fatalf("stored tat %q: %v", v, err)
				}
				tat := time.Unix(sec, nsec)
				if lo, hi := before.Add(3*time.Minute), after.Add(3*time.Minute); tat.Before(lo) || tat.After(hi) {
					t.Errorf("stored tat %v, want within [%v, %v]: the server's clock plus three intervals", tat, lo, hi)
				}
			})
		})
	}
}

// skewAnswers are what replicas whose clocks disagree see of one shared
// limit.
type skewAnswers struct {
	// After the skewed replica spends a fixed window of 10 per minute, is
	// the other's first call allowed? And the other way round?
	FixedAfterSkewed, FixedAfterTrue bool
	// Alternating 20 calls on a GCRA bucket of 10 per minute, the first by
	// the true replica: how many each got.
	GCRATrue, GCRASkewed int
}

// TestSkewedReplicas plays two replicas on one Redis, one of them inside a
// testing/synctest bubble, whose clock reads 2000-01-01: a replica whose
// clock is decades off. With Config.Now nil both decide by the server's
// clock and share the limits exactly as one clock would. With Config.Now
// each replica's own time.Now (what the store did before it read the
// server's clock) they do not, which shows the test can fail.
func TestSkewedReplicas(t *testing.T) {
	oneClock := skewAnswers{FixedAfterSkewed: false, FixedAfterTrue: false, GCRATrue: 5, GCRASkewed: 5}
	tests := []struct {
		name     string
		now      func() time.Time // each replica's Config.Now; time.Now reads the bubble's clock in it
		oneClock bool
	}{
		{"server clock", nil, true},
		{"each replica's clock", time.Now, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := playSkewed(t, tt.now)
			t.Logf("got %+v", got)
			if (got == oneClock) != tt.oneClock {
				t.Errorf("got %+v; one clock gives %+v; want the same: %v", got, oneClock, tt.oneClock)
			}
		})
	}
}

// playSkewed runs the calls of skewAnswers, the true replica's outside the
// bubble and the skewed one's inside it, one at a time, and returns what
// they saw. A run whose calls straddle a minute on the server's clock is
// played again on fresh buckets.
func playSkewed(t *testing.T, now func() time.Time) skewAnswers {
	c := testredis.Client(t)
	prefix := testredis.Prefix(t)
	cfg := redisquota.Config{Now: now, Timeout: 5 * time.Second}
	trueReplica := newStore(t, testredis.Client(t), prefix, cfg)
	skewed := newStore(t, testredis.Client(t), prefix, cfg)
	fixed := quota.Rule{Name: "fixed", Limit: 10, Window: time.Minute}
	gcra := quota.Rule{Name: "gcra", Limit: 10, Window: time.Minute, Algorithm: quota.TokenBucket}

	// The true replica's calls run on a goroutine outside the bubble.
	outside := make(chan func())
	done := make(chan struct{})
	go func() {
		for f := range outside {
			f()
			done <- struct{}{}
		}
	}()
	defer close(outside)
	type result struct {
		d   quota.Decision
		err error
	}
	call := func(s *redisquota.Store, rule quota.Rule, subject string) quota.Decision {
		var r result
		f := func() { r.d, r.err = s.Allow(context.Background(), rule, subject) }
		if s == skewed {
			f()
		} else {
			outside <- f
			<-done
		}
		if r.err != nil {
			t.Fatalf("Allow: %v", r.err)
		}
		return r.d
	}

	var got skewAnswers
	synctest.Test(t, func(t *testing.T) {
		if year := time.Now().Year(); year != 2000 {
			t.Fatalf("the bubble's clock reads %d, want 2000", year)
		}
		for run := 0; ; run++ {
			subject := quota.Subject(fmt.Sprint("run ", run))
			other := quota.Subject(fmt.Sprint("other run ", run))
			start := redisNow(t, c)
			for range 10 {
				call(skewed, fixed, subject)
			}
			got.FixedAfterSkewed = call(trueReplica, fixed, subject).Allowed
			for range 10 {
				call(trueReplica, fixed, other)
			}
			got.FixedAfterTrue = call(skewed, fixed, other).Allowed
			got.GCRATrue, got.GCRASkewed = 0, 0
			for i := range 20 {
				if i%2 == 0 && call(trueReplica, gcra, subject).Allowed {
					got.GCRATrue++
				}
				if i%2 == 1 && call(skewed, gcra, subject).Allowed {
					got.GCRASkewed++
				}
			}
			end := redisNow(t, c)
			// One token refills every 6s; a slower run, or one across a
			// minute, decides differently for reasons of its own.
			if end.Sub(start) < 6*time.Second && store.WindowStart(start, time.Minute).Equal(store.WindowStart(end, time.Minute)) {
				return
			}
			t.Logf("run %d took %v from %v; again", run, end.Sub(start), start)
		}
	})
	return got
}
