package quotatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

// odd has nanoseconds below the microsecond, so rounding on the way to a
// store and back shows.
const odd = 678901234 * time.Nanosecond

func (o opener) fixedWindowRollover(t *testing.T) {
	tests := []struct {
		name  string
		rule  quota.Rule
		start time.Time
		steps []step
	}{
		{"to the nanosecond", quota.Rule{Name: "signup", Limit: 2, Window: time.Minute}, t0.Add(10 * time.Second), []step{
			{0, 1, true, 1, 50 * time.Second},
			{5 * time.Second, 1, true, 0, 45 * time.Second},
			{5 * time.Second, 1, false, 0, 40 * time.Second},
			{40*time.Second - 1, 1, false, 0, 1},
			{1, 1, true, 1, time.Minute}, // the next window starts empty
		}},
		{"looks and costs", quota.Rule{Name: "signup", Limit: 2, Window: time.Minute}, t0.Add(10 * time.Second), []step{
			{0, 1, true, 1, 50 * time.Second},
			{5 * time.Second, 0, true, 1, 45 * time.Second},
			{0, 1, true, 0, 45 * time.Second},
			{5 * time.Second, 1, false, 0, 40 * time.Second},
			{40*time.Second - time.Millisecond, 1, false, 0, time.Millisecond},
			{time.Millisecond, 1, true, 1, time.Minute},
			{30 * time.Second, 2, false, 0, 30 * time.Second}, // refused, and counted
			{0, 0, false, 0, 30 * time.Second},
		}},
		{"from a window start", quota.Rule{Name: "rollover", Limit: 3, Window: time.Minute}, t0, []step{
			{10 * time.Second, 1, true, 2, 50 * time.Second},
			{0, 0, true, 2, 50 * time.Second},
			{20 * time.Second, 2, true, 0, 30 * time.Second},
			{0, 0, false, 0, 30 * time.Second},
			{29*time.Second + 999*time.Millisecond, 1, false, 0, time.Millisecond},
			{time.Millisecond, 1, true, 2, time.Minute},
			{59*time.Second + 500*time.Millisecond + 123, 3, false, 0, 500*time.Millisecond - 123},
			{time.Second, 1, true, 2, 59*time.Second + 500*time.Millisecond - 123},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := o.one(t, tt.start)
			runSteps(t, s, clk, tt.rule, tt.steps)
		})
	}
}

func (o opener) gcraBurstThenSteady(t *testing.T) {
	t.Run("one a second", func(t *testing.T) {
		s, clk := o.one(t, t0)
		rule := quota.Rule{Name: "login", Limit: 60, Window: time.Minute, Algorithm: quota.TokenBucket, Burst: 5}
		subject := quota.Subject("user@example.com")
		allowed := 0
		for range 20 {
			if allowN(t, s, rule, subject, 1).Allowed {
				allowed++
			}
		}
		if allowed != 5 {
			t.Errorf("burst: got %d allowed, want 5", allowed)
		}
		// One token a second from now on.
		for i := range 10 {
			clk.Advance(time.Second)
			if d := allowN(t, s, rule, subject, 1); !d.Allowed {
				t.Errorf("second %d: got refused %+v, want allowed", i+1, d)
			}
			if d := allowN(t, s, rule, subject, 1); d.Allowed || d.RetryAfter != time.Second {
				t.Errorf("second %d, again: got %+v, want refused with RetryAfter 1s", i+1, d)
			}
		}
	})
	t.Run("step by step", func(t *testing.T) {
		// 10 per second, bursts of 3: one token every 100ms.
		rule := quota.Rule{Name: "burst", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 3}
		s, clk := o.one(t, t0.Add(odd))
		runSteps(t, s, clk, rule, []step{
			{0, 0, true, 3, 0},
			{0, 1, true, 2, 0},
			{0, 1, true, 1, 0},
			{0, 1, true, 0, 100 * time.Millisecond},
			{0, 1, false, 0, 100 * time.Millisecond},
			{40 * time.Millisecond, 1, false, 0, 60 * time.Millisecond},
			// Then one call per interval, each emptying the bucket again.
			{60 * time.Millisecond, 1, true, 0, 100 * time.Millisecond},
			{100 * time.Millisecond, 1, true, 0, 100 * time.Millisecond},
			{100 * time.Millisecond, 2, false, 1, 100 * time.Millisecond},
			// Idle long enough, the bucket is full again, never fuller.
			{time.Hour, 0, true, 3, 0},
			{0, 4, false, 3, 100 * time.Millisecond},
			{0, 3, true, 0, 100 * time.Millisecond},
		})
	})
}

// looksSpendNothing wants a look (n = 0) to report what one more call would
// get and to change no later decision.
func (o opener) looksSpendNothing(t *testing.T) {
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			s, _ := o.one(t, t0)
			rule := quota.Rule{Name: "r", Limit: 2, Window: time.Minute, Algorithm: alg}
			for i := range 5 {
				if d := allowN(t, s, rule, quota.Subject(fmt.Sprint("new ", i)), 0); !d.Allowed || d.Remaining != 2 {
					t.Errorf("look %d at a new bucket: got %+v, want allowed with 2 remaining", i, d)
				}
			}
			if d := allowN(t, s, rule, quota.Subject("new 0"), 1); !d.Allowed || d.Remaining != 1 {
				t.Errorf("a call after looks: got %+v, want allowed with 1 remaining", d)
			}
			allowN(t, s, rule, quota.Subject("used"), 1)
			for range 3 {
				if d := allowN(t, s, rule, quota.Subject("used"), 0); !d.Allowed || d.Remaining != 1 {
					t.Errorf("look at a used bucket: got %+v, want allowed with 1 remaining", d)
				}
			}
			allowN(t, s, rule, quota.Subject("used"), 1)
			if d := allowN(t, s, rule, quota.Subject("used"), 0); d.Allowed || d.Remaining != 0 {
				t.Errorf("look at a spent bucket: got %+v, want refused with 0 remaining", d)
			}
		})
	}
}

// refusedGCRAKeepsBucket wants refused GCRA calls to cost nothing: the
// bucket refills when it would have without them.
func (o opener) refusedGCRAKeepsBucket(t *testing.T) {
	s, clk := o.one(t, t0.Add(odd))
	rule := quota.Rule{Name: "r", Limit: 1, Window: time.Minute, Algorithm: quota.TokenBucket}
	subject := quota.Subject("x")
	allowN(t, s, rule, subject, 1)
	for i := range 3 {
		clk.Advance(10 * time.Second)
		want := quota.Decision{RetryAfter: time.Duration(5-i) * 10 * time.Second, Limit: 1, Window: time.Minute}
		if d := allowN(t, s, rule, subject, 1); d != want {
			t.Fatalf("refused call %d: got %+v, want %+v", i+1, d, want)
		}
	}
	clk.Advance(30*time.Second - 1)
	if d := allowN(t, s, rule, subject, 1); d.Allowed || d.RetryAfter != 1 {
		t.Errorf("a nanosecond before the refill: got %+v, want refused with RetryAfter 1ns", d)
	}
	clk.Advance(1)
	if d := allowN(t, s, rule, subject, 1); !d.Allowed {
		t.Errorf("a window after the one allowed call: got %+v, want allowed", d)
	}
}

// algorithmsDoNotShareBuckets wants a bucket per rule name and algorithm.
func (o opener) algorithmsDoNotShareBuckets(t *testing.T) {
	s, _ := o.one(t, t0)
	subject := quota.Subject("x")
	rules := []quota.Rule{
		{Name: "same", Limit: 1, Window: time.Minute},
		{Name: "same", Limit: 1, Window: time.Minute, Algorithm: quota.TokenBucket},
		{Name: "other", Limit: 1, Window: time.Minute},
		{Name: "other", Limit: 1, Window: time.Minute, Algorithm: quota.TokenBucket},
	}
	for _, rule := range rules {
		if d := allowN(t, s, rule, subject, 1); !d.Allowed {
			t.Errorf("%s/%v: got %+v, want allowed", rule.Name, rule.Algorithm, d)
		}
	}
	for _, rule := range rules {
		if d := allowN(t, s, rule, subject, 1); d.Allowed {
			t.Errorf("%s/%v again: got %+v, want refused", rule.Name, rule.Algorithm, d)
		}
	}
}
