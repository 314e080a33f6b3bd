package store

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

// t0 is aligned to every window the tests use (a multiple of one hour since
// the Unix epoch), so window arithmetic in the tables reads plainly.
var t0 = time.Unix(1_700_000_000-1_700_000_000%3600, 0)

func TestWindowStart(t *testing.T) {
	tests := []struct {
		name   string
		now    time.Time
		window time.Duration
		want   time.Time
	}{
		{"aligned", t0, time.Minute, t0},
		{"inside", t0.Add(59 * time.Second), time.Minute, t0},
		{"next window", t0.Add(time.Minute), time.Minute, t0.Add(time.Minute)},
		{"last nanosecond", t0.Add(time.Minute - 1), time.Minute, t0},
		{"odd window", time.Unix(10, 0), 3 * time.Second, time.Unix(9, 0)},
		{"epoch", time.Unix(0, 0), time.Second, time.Unix(0, 0)},
		{"before epoch", time.Unix(-5, 0), 10 * time.Second, time.Unix(-10, 0)},
		{"before epoch aligned", time.Unix(-10, 0), 10 * time.Second, time.Unix(-10, 0)},
		{"time zone ignored", t0.In(time.FixedZone("X", 5*3600+1800)).Add(time.Second), time.Hour, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WindowStart(tt.now, tt.window); !got.Equal(tt.want) {
				t.Errorf("WindowStart(%v, %v): got %v, want %v", tt.now, tt.window, got, tt.want)
			}
		})
	}
}

func TestInterval(t *testing.T) {
	tests := []struct {
		name string
		rule quota.Rule
		want time.Duration
	}{
		{"even", quota.Rule{Limit: 10, Window: 10 * time.Second}, time.Second},
		{"truncated", quota.Rule{Limit: 3, Window: time.Second}, 333_333_333},
		{"at least 1ns", quota.Rule{Limit: 10, Window: time.Nanosecond}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Interval(tt.rule); got != tt.want {
				t.Errorf("Interval(%+v): got %v, want %v", tt.rule, got, tt.want)
			}
		})
	}
}

// step is one call in a step table: at t0+at, a call of cost n (0 looks)
// gets want.
type step struct {
	at   time.Duration
	n    int
	want quota.Decision
}

// run plays steps against a Model, which decides with the functions under
// test.
func run(t *testing.T, rule quota.Rule, steps []step) {
	t.Helper()
	var m Model
	for i, s := range steps {
		if got := m.AllowN(rule, t0.Add(s.at), s.n); got != s.want {
			t.Errorf("step %d (t0+%v, n=%d): got %+v, want %+v", i, s.at, s.n, got, s.want)
		}
	}
}

func TestFixedWindowSteps(t *testing.T) {
	rule := quota.Rule{Name: "signup", Limit: 3, Window: 10 * time.Second}
	ok := func(remaining int, retry time.Duration) quota.Decision {
		return quota.Decision{Allowed: true, Remaining: remaining, RetryAfter: retry, Limit: 3, Window: 10 * time.Second}
	}
	no := func(retry time.Duration) quota.Decision {
		return quota.Decision{RetryAfter: retry, Limit: 3, Window: 10 * time.Second}
	}
	run(t, rule, []step{
		{0, 1, ok(2, 10*time.Second)},
		{1 * time.Second, 1, ok(1, 9*time.Second)},
		{2 * time.Second, 0, ok(1, 8*time.Second)}, // a look spends nothing
		{3 * time.Second, 1, ok(0, 7*time.Second)},
		{4 * time.Second, 0, no(6 * time.Second)}, // a look at a full window
		{5 * time.Second, 1, no(5 * time.Second)}, // refused, and counted
		{9*time.Second + 999*time.Millisecond, 1, no(time.Millisecond)},
		{10 * time.Second, 1, ok(2, 10*time.Second)}, // rollover
		{10 * time.Second, 2, ok(0, 10*time.Second)}, // n > 1 spends n
		{15 * time.Second, 1, no(5 * time.Second)},
		{20 * time.Second, 4, no(10 * time.Second)}, // more than Limit at once
		{21 * time.Second, 0, no(9 * time.Second)},  // the refused 4 were counted
	})
}

// TestFixedWindowSeam shows the documented trade-off: up to twice the limit
// passes across a window seam.
func TestFixedWindowSeam(t *testing.T) {
	rule := quota.Rule{Limit: 5, Window: time.Minute}
	var m Model
	allowed := 0
	for _, at := range []time.Duration{time.Minute - time.Second, time.Minute} {
		for range 10 {
			if m.AllowN(rule, t0.Add(at), 1).Allowed {
				allowed++
			}
		}
	}
	if want := 2 * rule.Limit; allowed != want {
		t.Errorf("allowed within 1s across the seam: got %d, want %d", allowed, want)
	}
}

func TestGCRASteps(t *testing.T) {
	// One token a second, three at once.
	rule := quota.Rule{Name: "login", Limit: 10, Window: 10 * time.Second, Algorithm: quota.TokenBucket, Burst: 3}
	ok := func(remaining int, retry time.Duration) quota.Decision {
		return quota.Decision{Allowed: true, Remaining: remaining, RetryAfter: retry, Limit: 10, Window: 10 * time.Second}
	}
	no := func(retry time.Duration) quota.Decision {
		return quota.Decision{RetryAfter: retry, Limit: 10, Window: 10 * time.Second}
	}
	run(t, rule, []step{
		{0, 1, ok(2, 0)},
		{0, 1, ok(1, 0)},
		{0, 0, ok(1, 0)}, // a look spends nothing
		{0, 1, ok(0, time.Second)},
		{0, 1, no(time.Second)}, // burst spent
		{0, 0, no(time.Second)},
		{500 * time.Millisecond, 1, no(500 * time.Millisecond)},
		{1 * time.Second, 1, ok(0, time.Second)}, // then one a second
		{2 * time.Second, 1, ok(0, time.Second)},
		{2500 * time.Millisecond, 1, no(500 * time.Millisecond)}, // refused calls cost nothing
		{3 * time.Second, 1, ok(0, time.Second)},
		{5 * time.Second, 1, ok(1, 0)},  // two seconds idle refilled two tokens
		{20 * time.Second, 2, ok(1, 0)}, // idle: full again, never more than Burst
		{20 * time.Second, 3, quota.Decision{Remaining: 1, RetryAfter: 2 * time.Second, Limit: 10, Window: 10 * time.Second}},
	})
}

func TestGCRABurstThenSteady(t *testing.T) {
	rule := quota.Rule{Limit: 10, Window: 10 * time.Second, Algorithm: quota.TokenBucket, Burst: 3}
	var m Model
	var allowedAt []time.Duration
	for at := time.Duration(0); at < 10*time.Second; at += 100 * time.Millisecond {
		if m.AllowN(rule, t0.Add(at), 1).Allowed {
			allowedAt = append(allowedAt, at)
		}
	}
	// Three at once, then one a second.
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}
	for s := 1; s <= 9; s++ {
		want = append(want, time.Duration(s)*time.Second)
	}
	if len(allowedAt) != len(want) {
		t.Fatalf("allowed at %v: got %d calls, want %d (%v)", allowedAt, len(allowedAt), len(want), want)
	}
	for i := range want {
		if allowedAt[i] != want[i] {
			t.Errorf("call %d: got t0+%v, want t0+%v", i, allowedAt[i], want[i])
		}
	}
}

func TestGCRADecisionTAT(t *testing.T) {
	rule := quota.Rule{Limit: 10, Window: 10 * time.Second, Algorithm: quota.TokenBucket, Burst: 2}
	now := t0
	tests := []struct {
		name    string
		tat     time.Time
		n       int
		allowed bool
		wantTAT time.Time
	}{
		{"new bucket", time.Time{}, 1, true, now.Add(time.Second)},
		{"past tat is full", now.Add(-time.Hour), 2, true, now.Add(2 * time.Second)},
		{"allowed moves tat", now.Add(time.Second), 1, true, now.Add(2 * time.Second)},
		{"refused keeps tat", now.Add(2 * time.Second), 1, false, now.Add(2 * time.Second)},
		{"look keeps tat", now.Add(time.Second), 0, true, now.Add(time.Second)},
		{"look at new bucket", time.Time{}, 0, true, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, tat := GCRADecision(rule, now, tt.tat, tt.n)
			if d.Allowed != tt.allowed {
				t.Errorf("Allowed: got %v, want %v", d.Allowed, tt.allowed)
			}
			if !tat.Equal(tt.wantTAT) {
				t.Errorf("tat: got %v, want %v", tat, tt.wantTAT)
			}
		})
	}
}

// TestGCRAFullBucketDecidesLikeNew checks what lets a store forget a bucket:
// once its tat is reached, it decides exactly like a bucket never seen.
func TestGCRAFullBucketDecidesLikeNew(t *testing.T) {
	rule := quota.Rule{Limit: 5, Window: time.Second, Algorithm: quota.TokenBucket}
	tests := []struct {
		name string
		tat  time.Time
	}{
		{"future", t0.Add(300 * time.Millisecond)},
		{"now", t0},
		{"past", t0.Add(-time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			full := tt.tat // the bucket is full again at its tat, or now if that passed
			if full.Before(t0) {
				full = t0
			}
			for n := range 7 {
				got, _ := GCRADecision(rule, full, tt.tat, n)
				want, _ := GCRADecision(rule, full, time.Time{}, n)
				if got != want {
					t.Errorf("n=%d once full: got %+v, want %+v (a new bucket)", n, got, want)
				}
			}
		})
	}
}

// TestDecisionInvariants drives both algorithms with random calls and checks
// what must hold for every decision.
func TestDecisionInvariants(t *testing.T) {
	rules := []quota.Rule{
		{Limit: 1, Window: time.Second},
		{Limit: 7, Window: 3 * time.Second},
		{Limit: 1, Window: time.Second, Algorithm: quota.TokenBucket},
		{Limit: 7, Window: 3 * time.Second, Algorithm: quota.TokenBucket},
		{Limit: 7, Window: 3 * time.Second, Algorithm: quota.TokenBucket, Burst: 2},
		{Limit: 3, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 9},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, rule := range rules {
		var m Model
		now := t0
		for i := range 5000 {
			now = now.Add(time.Duration(r.Int64N(int64(rule.Window / 4))))
			n := r.IntN(4)
			var d quota.Decision
			if rule.Algorithm == quota.TokenBucket {
				before := m.TAT
				d = m.AllowN(rule, now, n)
				if (n == 0 || !d.Allowed) && !m.TAT.Equal(before) {
					t.Fatalf("%v step %d: n=%d allowed=%v changed tat", rule, i, n, d.Allowed)
				}
				if d.Remaining > rule.BurstOrLimit() {
					t.Fatalf("%v step %d: Remaining %d above burst", rule, i, d.Remaining)
				}
			} else {
				d = m.AllowN(rule, now, n)
				if d.Remaining > rule.Limit {
					t.Fatalf("%v step %d: Remaining %d above limit", rule, i, d.Remaining)
				}
				if d.RetryAfter <= 0 || d.RetryAfter > rule.Window {
					t.Fatalf("%v step %d: RetryAfter %v outside (0, %v]", rule, i, d.RetryAfter, rule.Window)
				}
			}
			if d.Remaining < 0 {
				t.Fatalf("%v step %d: Remaining %d is negative", rule, i, d.Remaining)
			}
			if d.RetryAfter < 0 {
				t.Fatalf("%v step %d: RetryAfter %v is negative", rule, i, d.RetryAfter)
			}
			if !d.Allowed && d.Remaining >= max(n, 1) && rule.Algorithm == quota.TokenBucket {
				t.Fatalf("%v step %d: refused n=%d with %d remaining", rule, i, n, d.Remaining)
			}
			if d.Limit != rule.Limit || d.Window != rule.Window {
				t.Fatalf("%v step %d: Limit, Window: got %d, %v, want %d, %v", rule, i, d.Limit, d.Window, rule.Limit, rule.Window)
			}
		}
	}
}

// TestLookAgreesWithCall checks that a look (n = 0) predicts whether a call of
// cost 1 at the same instant would pass.
func TestLookAgreesWithCall(t *testing.T) {
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			rule := quota.Rule{Limit: 4, Window: time.Second, Algorithm: alg, Burst: 2}
			var m Model
			for i := range 40 {
				now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
				look := m.AllowN(rule, now, 0)
				call := m.AllowN(rule, now, 1)
				if look.Allowed != call.Allowed {
					t.Errorf("t0+%v: look Allowed %v, call Allowed %v", now.Sub(t0), look.Allowed, call.Allowed)
				}
			}
		})
	}
}
