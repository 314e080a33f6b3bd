package memquota_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
)

func newCounter(t *testing.T, max int, clock *testclock.Clock) *memquota.Counter {
	t.Helper()
	c, err := memquota.NewCounter(memquota.CounterConfig{MaxCounters: max, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCounterWindows counts in windows aligned to the Unix epoch, every hit
// added, and two hits on one counter in one call in order.
func TestCounterWindows(t *testing.T) {
	clock := testclock.New(time.Unix(1_699_999_990, 0)) // 10 s into a minute
	c := newCounter(t, 0, clock)
	count := func(hits ...quota.Hit) []uint64 {
		t.Helper()
		if _, err := c.Count(context.Background(), hits); err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, h := range hits {
			out = append(out, h.Count)
		}
		return out
	}
	hit := func(key string, n uint64) quota.Hit { return quota.Hit{Key: key, Window: time.Minute, N: n} }
	for i, step := range []struct {
		advance time.Duration
		hits    []quota.Hit
		want    []uint64
	}{
		{0, []quota.Hit{hit("a", 1)}, []uint64{1}},
		{0, []quota.Hit{hit("a", 2), hit("a", 3)}, []uint64{3, 6}},
		{0, []quota.Hit{hit("a", 0)}, []uint64{6}},
		{49 * time.Second, []quota.Hit{hit("a", 1), hit("b", 1)}, []uint64{7, 1}},
		{time.Second, []quota.Hit{hit("a", 1)}, []uint64{1}},
		{0, []quota.Hit{{Key: "a", Window: time.Hour, N: 5}}, []uint64{5}},
	} {
		clock.Advance(step.advance)
		got := count(step.hits...)
		for j := range got {
			if got[j] != step.want[j] {
				t.Fatalf("step %d: counts %v, want %v", i, got, step.want)
			}
		}
	}
	if _, err := c.Count(context.Background(), []quota.Hit{{Key: "a", Window: 1500 * time.Millisecond}}); err == nil {
		t.Fatal("a window of 1.5s was accepted")
	}
	if _, err := c.Count(context.Background(), []quota.Hit{hit("a", math.MaxUint64)}); !errors.Is(err, memquota.ErrCountOverflow) {
		t.Fatalf("got %v, want ErrCountOverflow", err)
	}
}

// TestCounterBounded sends more keys than MaxCounters, none of them saying
// its limit, and wants the counter to keep at most that many, forgetting
// none of them while their windows are live: the newcomers share the
// overflow's count.
func TestCounterBounded(t *testing.T) {
	c := newCounter(t, 100, testclock.New(time.Unix(1_700_000_000, 0)))
	for i := range 10_000 {
		if _, err := c.Count(context.Background(), []quota.Hit{{Key: fmt.Sprint("k", i), Window: time.Hour, N: 1}}); err != nil {
			t.Fatal(err)
		}
		if c.Len() > 100 {
			t.Fatalf("%d counters after %d keys, want at most 100", c.Len(), i+1)
		}
	}
	first := []quota.Hit{{Key: "k0", Window: time.Hour, N: 1}}
	c.Count(context.Background(), first)
	if first[0].Count != 2 {
		t.Fatalf("the first key's count: got %d, want 2 (kept while its window is live)", first[0].Count)
	}
	late := []quota.Hit{{Key: "late", Window: time.Hour, N: 1}}
	c.Count(context.Background(), late)
	if late[0].Count != 9901 {
		t.Fatalf("a newcomer's count: got %d, want 9901 (the overflow's)", late[0].Count)
	}
}
