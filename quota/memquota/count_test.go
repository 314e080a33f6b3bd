package memquota_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
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
	count := func(hits ...memquota.Hit) []uint64 {
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
	hit := func(key string, n uint64) memquota.Hit { return memquota.Hit{Key: key, Window: time.Minute, N: n} }
	for i, step := range []struct {
		advance time.Duration
		hits    []memquota.Hit
		want    []uint64
	}{
		{0, []memquota.Hit{hit("a", 1)}, []uint64{1}},
		{0, []memquota.Hit{hit("a", 2), hit("a", 3)}, []uint64{3, 6}},
		{0, []memquota.Hit{hit("a", 0)}, []uint64{6}},
		{49 * time.Second, []memquota.Hit{hit("a", 1), hit("b", 1)}, []uint64{7, 1}},
		{time.Second, []memquota.Hit{hit("a", 1)}, []uint64{1}},
		{0, []memquota.Hit{{Key: "a", Window: time.Hour, N: 5}}, []uint64{5}},
	} {
		clock.Advance(step.advance)
		got := count(step.hits...)
		for j := range got {
			if got[j] != step.want[j] {
				t.Fatalf("step %d: counts %v, want %v", i, got, step.want)
			}
		}
	}
	if _, err := c.Count(context.Background(), []memquota.Hit{{Key: "a", Window: 1500 * time.Millisecond}}); err == nil {
		t.Fatal("a window of 1.5s was accepted")
	}
	if _, err := c.Count(context.Background(), []memquota.Hit{hit("a", math.MaxUint64)}); !errors.Is(err, memquota.ErrCountOverflow) {
		t.Fatalf("got %v, want ErrCountOverflow", err)
	}
}

// TestCounterBounded sends more keys than MaxCounters and wants the counter
// to keep at most that many, dropping the least recently used.
func TestCounterBounded(t *testing.T) {
	c := newCounter(t, 100, testclock.New(time.Unix(1_700_000_000, 0)))
	for i := range 10_000 {
		if _, err := c.Count(context.Background(), []memquota.Hit{{Key: string(rune('a'+i%26)) + time.Duration(i).String(), Window: time.Hour, N: 1}}); err != nil {
			t.Fatal(err)
		}
		if c.Len() > 100 {
			t.Fatalf("%d counters after %d keys, want at most 100", c.Len(), i+1)
		}
	}
	hot := []memquota.Hit{{Key: "hot", Window: time.Hour, N: 1}}
	for range 5 {
		c.Count(context.Background(), hot)
		c.Count(context.Background(), []memquota.Hit{{Key: "cold" + time.Now().String(), Window: time.Hour, N: 1}})
	}
	if hot[0].Count != 5 {
		t.Fatalf("the recently used counter was dropped: count %d, want 5", hot[0].Count)
	}
}
