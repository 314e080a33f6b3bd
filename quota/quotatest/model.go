package quotatest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// matchesModel drives the store and the shared arithmetic with the same
// random calls; every decision must be identical. Odd windows, intervals
// that are not whole microseconds and times before 1970 make rounding show.
//
// Two walks move the clock. The window walk goes forward by up to a quarter
// window, so fixed windows fill and roll over. The interval walk moves by a
// few emission intervals, and sometimes back, as replicas' clocks do; for a
// fixed window it steps back only within the current window, since a store
// may keep only its latest window (the in-memory store does) and then
// counts on in it.
func (o opener) matchesModel(t *testing.T) {
	rules := []struct {
		rule  quota.Rule
		start time.Time
	}{
		{quota.Rule{Name: "fw", Limit: 5, Window: 2 * time.Second}, t0},
		{quota.Rule{Name: "fw1", Limit: 1, Window: time.Second}, t0},
		{quota.Rule{Name: "fw-minute", Limit: 7, Window: time.Minute}, t0.Add(odd)},
		{quota.Rule{Name: "fw-odd", Limit: 3, Window: 1700 * time.Millisecond}, t0},
		{quota.Rule{Name: "fw-odd-ns", Limit: 3, Window: 1234567891 * time.Nanosecond}, t0.Add(odd)},
		{quota.Rule{Name: "fw-before-1970", Limit: 2, Window: 3 * time.Second}, time.Unix(-7, 5e8)},
		{quota.Rule{Name: "gcra", Limit: 5, Window: 2 * time.Second, Algorithm: quota.TokenBucket}, t0},
		{quota.Rule{Name: "gcra-burst", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 3}, t0},
		{quota.Rule{Name: "gcra-thirds", Limit: 3, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 2}, t0},
		{quota.Rule{Name: "gcra-thirds-10s", Limit: 3, Window: 10 * time.Second, Algorithm: quota.TokenBucket}, t0.Add(odd)},
		{quota.Rule{Name: "gcra-burst-below-limit", Limit: 7, Window: time.Minute, Algorithm: quota.TokenBucket, Burst: 2}, t0.Add(odd)},
		{quota.Rule{Name: "gcra-burst-above-limit", Limit: 13, Window: time.Hour, Algorithm: quota.TokenBucket, Burst: 40}, t0.Add(odd)},
		{quota.Rule{Name: "gcra-ns-interval", Limit: 1e9 - 1, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 5}, t0.Add(odd)},
		{quota.Rule{Name: "gcra-before-1970", Limit: 5, Window: 7 * time.Second, Algorithm: quota.TokenBucket}, time.Unix(-3, 999999999)},
	}
	walks := []struct {
		name string
		step func(r *rand.Rand, rule quota.Rule, now time.Time) time.Duration
	}{
		{"window walk", func(r *rand.Rand, rule quota.Rule, _ time.Time) time.Duration {
			return time.Duration(r.Int64N(int64(rule.Window / 4)))
		}},
		{"interval walk", func(r *rand.Rand, rule quota.Rule, now time.Time) time.Duration {
			interval := store.Interval(rule)
			d := time.Duration(r.Int64N(int64(3*interval))) - interval/2
			if d < 0 && rule.Algorithm == quota.FixedWindow && !store.WindowStart(now.Add(d), rule.Window).Equal(store.WindowStart(now, rule.Window)) {
				d = 0
			}
			return d
		}},
	}
	for i, tt := range rules {
		for _, walk := range walks {
			t.Run(tt.rule.Name+"/"+walk.name, func(t *testing.T) {
				s, clk := o.one(t, tt.start)
				subject := quota.Subject(tt.rule.Name)
				r := rand.New(rand.NewPCG(uint64(i), 4))
				var m store.Model
				for call := range modelCalls {
					clk.Advance(walk.step(r, tt.rule, clk.Now()))
					now := clk.Now()
					n := r.IntN(4)
					want := m.AllowN(tt.rule, now, n)
					if got := allowN(t, s, tt.rule, subject, n); got != want {
						t.Fatalf("call %d at %v, n=%d: got %+v, want %+v", call, now, n, got, want)
					}
				}
			})
		}
	}
}

// modelCalls is how many calls each walk makes.
const modelCalls = 500
