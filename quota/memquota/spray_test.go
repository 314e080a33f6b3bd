package memquota_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
)

// sprayTable is the bound of the spray tests; each sprays ten times as
// many distinct keys.
const sprayTable = 100

// TestCounterSpray sprays ten times the table's size of distinct keys
// through Count and wants a key over its limit to stay over, a fresh key's
// first hits counted on their own, and the table within its bound.
func TestCounterSpray(t *testing.T) {
	c := newCounter(t, sprayTable, testclock.New(time.Unix(1_700_000_000, 0)))
	const limit = 5
	count := func(key string) uint64 {
		t.Helper()
		hits := []quota.Hit{{Key: key, Window: time.Minute, N: 1, Limit: limit}}
		if _, err := c.Count(context.Background(), hits); err != nil {
			t.Fatal(err)
		}
		return hits[0].Count
	}
	for range limit + 1 {
		count("spent")
	}
	for i := range 10 * sprayTable {
		count(fmt.Sprint("spray", i))
		if c.Len() > sprayTable {
			t.Fatalf("%d counters after %d keys, want at most %d", c.Len(), i+1, sprayTable)
		}
	}
	if got := count("spent"); got != limit+2 {
		t.Errorf("the spent key after the spray: count %d, want %d (still over %d)", got, limit+2, limit)
	}
	for i := range uint64(limit) {
		if got := count("fresh"); got != i+1 {
			t.Errorf("the fresh key's hit %d: count %d, want %d", i+1, got, i+1)
		}
	}
}

// TestCounterSpraySpent fills the table with keys at their limit, then
// sprays: no spent key is forgotten, and the newcomers share the
// overflow's count.
func TestCounterSpraySpent(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	c := newCounter(t, sprayTable, clock)
	hit := func(key string) quota.Hit { return quota.Hit{Key: key, Window: time.Minute, N: 1, Limit: 1} }
	for i := range sprayTable {
		c.Count(context.Background(), []quota.Hit{hit(fmt.Sprint("spent", i))})
	}
	for i := range 10 * sprayTable {
		c.Count(context.Background(), []quota.Hit{hit(fmt.Sprint("spray", i))})
	}
	if c.Len() != sprayTable {
		t.Errorf("counters: got %d, want %d", c.Len(), sprayTable)
	}
	for i := range sprayTable {
		hits := []quota.Hit{hit(fmt.Sprint("spent", i))}
		c.Count(context.Background(), hits)
		if hits[0].Count != 2 {
			t.Fatalf("spent key %d after the spray: count %d, want 2", i, hits[0].Count)
		}
	}
	// Once the windows end, newcomers count on their own again.
	clock.Advance(time.Minute)
	fresh := []quota.Hit{hit("fresh")}
	c.Count(context.Background(), fresh)
	if fresh[0].Count != 1 {
		t.Errorf("a newcomer after the windows ended: count %d, want 1", fresh[0].Count)
	}
}

// TestMemorySpray does for Memory's buckets, under both algorithms, what
// TestCounterSpray does for the Counter.
func TestMemorySpray(t *testing.T) {
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			m := newMemory(t, memquota.Config{MaxBuckets: sprayTable, Now: testclock.New(t0).Now})
			rule := quota.Rule{Name: "r", Limit: 5, Window: time.Minute, Algorithm: alg}
			spent := quota.Subject("spent")
			for range rule.Limit {
				allowN(t, m, rule, spent, 1)
			}
			for i := range 10 * sprayTable {
				allowN(t, m, rule, quota.Subject(fmt.Sprint("spray", i)), 1)
				if m.Len() > sprayTable {
					t.Fatalf("%d buckets after %d subjects, want at most %d", m.Len(), i+1, sprayTable)
				}
			}
			if d := allowN(t, m, rule, spent, 1); d.Allowed {
				t.Errorf("the spent subject after the spray: got %+v, want refused", d)
			}
			fresh := quota.Subject("fresh")
			for i := range rule.Limit {
				if d := allowN(t, m, rule, fresh, 1); !d.Allowed || d.Remaining != rule.Limit-i-1 {
					t.Errorf("the fresh subject's call %d: got %+v, want allowed with %d remaining", i+1, d, rule.Limit-i-1)
				}
			}
			if d := allowN(t, m, rule, fresh, 1); d.Allowed {
				t.Errorf("the fresh subject past its limit: got %+v, want refused", d)
			}
		})
	}
}
