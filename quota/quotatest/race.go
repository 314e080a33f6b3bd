package quotatest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

// race makes calls calls of subject against rule from goroutines
// goroutines, spread round-robin over stores, all at once, and returns the
// allowed and refused decisions. It fails t on any error.
func race(t *testing.T, stores []quota.Charger, rule quota.Rule, subject string, goroutines, calls int) (allowed, refused []quota.Decision) {
	t.Helper()
	var (
		mu sync.Mutex // guards allowed and refused
		wg sync.WaitGroup
	)
	for i := range goroutines {
		s := stores[i%len(stores)]
		wg.Go(func() {
			for range calls / goroutines {
				d, err := s.Allow(context.Background(), rule, subject)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if d.Allowed {
					allowed = append(allowed, d)
				} else {
					refused = append(refused, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return allowed, refused
}

// exact wants exactly want calls allowed, each having seen a count of its
// own (Remaining want-1 for the first, down to 0), and every refused call
// to report 0 remaining.
func exact(t *testing.T, allowed, refused []quota.Decision, want int) {
	t.Helper()
	if len(allowed) != want {
		t.Errorf("allowed: got %d, want %d", len(allowed), want)
	}
	remaining := make([]int, 0, len(allowed))
	for _, d := range allowed {
		remaining = append(remaining, d.Remaining)
	}
	slices.Sort(remaining)
	for i, r := range remaining {
		if r != i {
			t.Errorf("sorted Remaining of allowed calls: got %d at %d, want %d (each call its own count)", r, i, i)
			break
		}
	}
	for _, d := range refused {
		if d.Remaining != 0 {
			t.Errorf("refused call: got Remaining %d, want 0", d.Remaining)
			break
		}
	}
}

// concurrent races 1,000 calls from 50 goroutines on one instance.
func (o opener) concurrent(t *testing.T) {
	for _, rule := range []quota.Rule{
		{Name: "fw", Limit: 100, Window: time.Hour},
		{Name: "gcra", Limit: 100, Window: time.Hour, Algorithm: quota.TokenBucket},
	} {
		t.Run(rule.Algorithm.String(), func(t *testing.T) {
			s, _ := o.one(t, t0)
			allowed, refused := race(t, []quota.Charger{s}, rule, quota.Subject("hot"), 50, 1000)
			exact(t, allowed, refused, rule.Limit)
		})
	}
}

// acrossInstances races calls from 200 goroutines spread over two
// instances on the same storage, as replicas do.
func (o opener) acrossInstances(t *testing.T) {
	subject := quota.Subject("203.0.113.7")
	t.Run("fixed window", func(t *testing.T) {
		first, second, _ := o.both(t, t0.Add(10*time.Second), quota.FailClosed)
		rule := quota.Rule{Name: "signup", Limit: 100, Window: time.Minute}
		allowed, refused := race(t, []quota.Charger{first, second}, rule, subject, 200, 1000)
		exact(t, allowed, refused, 100)
		if len(refused) != 900 {
			t.Errorf("refused: got %d, want 900", len(refused))
		}
		for _, d := range append(allowed, refused...) {
			if d.RetryAfter != 50*time.Second || d.Limit != 100 || d.Window != time.Minute {
				t.Errorf("decision %+v: want RetryAfter 50s, Limit 100, Window 1m", d)
				break
			}
		}
	})
	t.Run("gcra", func(t *testing.T) {
		first, second, _ := o.both(t, t0, quota.FailClosed)
		rule := quota.Rule{Name: "signup", Limit: 100, Window: time.Minute, Algorithm: quota.TokenBucket}
		allowed, refused := race(t, []quota.Charger{first, second}, rule, subject, 200, 1000)
		exact(t, allowed, refused, 100)
	})
	t.Run("gcra refill", func(t *testing.T) {
		// The burst, then exactly the tokens that refill, whoever asks.
		first, second, clk := o.both(t, t0, quota.FailClosed)
		rule := quota.Rule{Name: "door", Limit: 3600, Window: time.Hour, Algorithm: quota.TokenBucket, Burst: 100}
		stores := []quota.Charger{first, second}
		allowed, refused := race(t, stores, rule, subject, 200, 1000)
		exact(t, allowed, refused, 100)
		clk.Advance(10 * time.Second) // ten tokens at one a second
		if allowed, _ := race(t, stores, rule, subject, 200, 400); len(allowed) != 10 {
			t.Errorf("after 10s: got %d allowed, want 10", len(allowed))
		}
	})
}
