package storedown

import (
	"sync"
	"testing"
	"time"
)

const every = Every

// t0 is any time on the caller's time line.
const t0 = 7 * every

// A step is one call on a breaker, at an explicit time.
type step struct {
	at   int64
	op   string // "ask", "failed" or "answered"
	want bool   // Ask's answer, Failed's first, Answered's back
	down bool   // Down after the call
}

func run(t *testing.T, name string, steps []step) {
	t.Helper()
	var b Breaker
	for i, s := range steps {
		var got bool
		switch s.op {
		case "ask":
			got = b.Ask(s.at)
		case "failed":
			got = b.Failed(s.at)
		case "answered":
			got = b.Answered()
		}
		if got != s.want || b.Down() != s.down {
			t.Fatalf("%s: step %d (%s at %v): got %v (down %v), want %v (down %v)",
				name, i, s.op, time.Duration(s.at-t0), got, b.Down(), s.want, s.down)
		}
	}
}

func TestBreaker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"answering store is always asked", []step{
			{t0, "ask", true, false},
			{t0, "answered", false, false},
			{t0 + 5*every, "ask", true, false},
		}},
		{"no call asks within a second of a failure", []step{
			{t0, "ask", true, false},
			{t0, "failed", true, true},
			{t0, "ask", false, true},
			{t0 + every/2, "ask", false, true},
			{t0 + every - 1, "ask", false, true},
		}},
		{"one probe a second", []step{
			{t0, "failed", true, true},
			{t0 + every, "ask", true, true},
			{t0 + every, "ask", false, true},
			{t0 + every + every/2, "ask", false, true},
			{t0 + 2*every, "ask", true, true},
			{t0 + 2*every + 1, "ask", false, true},
		}},
		{"a failed probe holds the next one a second after it", []step{
			{t0, "failed", true, true},
			{t0 + 3*every, "ask", true, true},
			{t0 + 3*every + 100, "failed", false, true},
			{t0 + 4*every, "ask", false, true},
			{t0 + 4*every + 100, "ask", true, true},
		}},
		{"a late failure of an old call brings no early probe", []step{
			{t0, "failed", true, true},
			{t0 - every/2, "failed", false, true},
			{t0 + every/2, "ask", false, true},
			{t0 + every, "ask", true, true},
		}},
		{"the first answer ends the outage", []step{
			{t0, "failed", true, true},
			{t0 + every, "ask", true, true},
			{t0 + every, "answered", true, false},
			{t0 + every, "ask", true, false},
			{t0 + every, "answered", false, false},
		}},
		{"an old call's answer ends it too", []step{
			{t0, "failed", true, true},
			{t0, "answered", true, false},
			{t0, "ask", true, false},
		}},
		{"a new outage begins afresh", []step{
			{t0, "failed", true, true},
			{t0, "answered", true, false},
			{t0 + 10*every, "failed", true, true},
			{t0 + 10*every, "ask", false, true},
			{t0 + 11*every, "ask", true, true},
		}},
		{"a probe due at 0 waits a nanosecond, 0 meaning up", []step{
			{-every, "failed", true, true},
			{0, "ask", false, true},
			{1, "ask", true, true},
		}},
	} {
		run(t, tc.name, tc.steps)
	}
}

// TestBreakerOneProbe races many calls at a due probe: one asks.
func TestBreakerOneProbe(t *testing.T) {
	var b Breaker
	b.Failed(t0)
	var wg sync.WaitGroup
	var mu sync.Mutex // guards asked
	asked := 0
	for range 64 {
		wg.Go(func() {
			if b.Ask(t0 + every) {
				mu.Lock()
				asked++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if asked != 1 {
		t.Fatalf("%d calls probed, want 1", asked)
	}
}
