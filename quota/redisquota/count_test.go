package redisquota_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

// TestCounterExact has 50 callers add 20 hits each to one counter, batched
// and not, and wants every count from 1 to 1,000 handed out exactly once:
// coalesced hits see one another in order, as single INCRBYs would.
func TestCounterExact(t *testing.T) {
	for _, batch := range []int{0, 64} {
		c, err := redisquota.NewCounter(testredis.Client(t), redisquota.CounterConfig{Prefix: testredis.Prefix(t), Batch: batch, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		var mu sync.Mutex
		seen := map[uint64]int{}
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				for range 20 {
					hits := []quota.Hit{{Key: "k", Window: time.Hour, N: 1}}
					if _, err := c.Count(context.Background(), hits); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[hits[0].Count]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for n := uint64(1); n <= 1000; n++ {
			if seen[n] != 1 {
				t.Fatalf("batch %d: count %d handed out %d times, want once", batch, n, seen[n])
			}
		}
	}
}

// TestCounterClock counts by an injected clock: a new window starts
// afresh, two hits on one counter in one call count in order, and a read
// (N 0) adds nothing.
func TestCounterClock(t *testing.T) {
	clock := testclock.New(time.Unix(1_699_999_990, 0))
	c, err := redisquota.NewCounter(testredis.Client(t), redisquota.CounterConfig{Prefix: testredis.Prefix(t), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	count := func(hits ...quota.Hit) []uint64 {
		t.Helper()
		now, err := c.Count(context.Background(), hits)
		if err != nil {
			t.Fatal(err)
		}
		if !now.Equal(clock.Now().Truncate(time.Second)) {
			t.Fatalf("counted at %v, want %v", now, clock.Now())
		}
		var out []uint64
		for _, h := range hits {
			out = append(out, h.Count)
		}
		return out
	}
	h := func(n uint64) quota.Hit { return quota.Hit{Key: "k", Window: time.Minute, N: n} }
	if got := count(h(1), h(2), h(0)); got[0] != 1 || got[1] != 3 || got[2] != 3 {
		t.Fatalf("counts %v, want [1 3 3]", got)
	}
	clock.Advance(50 * time.Second)
	if got := count(h(0), h(1)); got[0] != 0 || got[1] != 1 {
		t.Fatalf("next window: counts %v, want [0 1]", got)
	}
	if _, err := c.Count(context.Background(), []quota.Hit{{Key: "a{b", Window: time.Minute, N: 1}}); err == nil {
		t.Fatal("a key with \"{\" was accepted")
	}
}
