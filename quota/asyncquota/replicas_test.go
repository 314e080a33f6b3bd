package asyncquota_test

import (
	"context"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/asyncquota"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
)

// stores opens, for each kind of shared store, n instances on one storage,
// as n replicas would have them, on clk.
var stores = []struct {
	name string
	open func(t *testing.T, clk *testclock.Clock, n int) []quota.Reconciler
}{
	{"memory", func(t *testing.T, clk *testclock.Clock, n int) []quota.Reconciler {
		m, err := memquota.New(memquota.Config{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]quota.Reconciler, n)
		for i := range out {
			out[i] = m
		}
		return out
	}},
	{"postgres", func(t *testing.T, clk *testclock.Clock, n int) []quota.Reconciler {
		db := testpg.New(t)
		out := make([]quota.Reconciler, n)
		for i := range out {
			s, err := pgquota.New(db.Pool(t), pgquota.Config{Now: clk.Now, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			out[i] = s
		}
		return out
	}},
	{"redis", func(t *testing.T, clk *testclock.Clock, n int) []quota.Reconciler {
		prefix := testredis.Prefix(t)
		out := make([]quota.Reconciler, n)
		for i := range out {
			s, err := redisquota.New(testredis.Client(t), redisquota.Config{Prefix: prefix, Now: clk.Now, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			out[i] = s
		}
		return out
	}},
}

// TestReplicasStayWithinBound runs three replicas in the async mode over
// one real store, each asked far more than the limit on one hot bucket,
// each reconciling every interval at its own phase, on one injected clock.
// Over every span of the run, what they admit together must stay within
// what one exact store admits plus Bound, and must not fall far below the
// budget either. Two loads: every replica asked all the time, and the
// replicas asked in turns of 200 ms, so that each one comes back to the
// bucket with what it knew when it left, as a client that its load
// balancer moves from replica to replica would find them. Two intervals:
// the default, and the second that docs/quota.md suggests where the
// store's cost per request matters more than the bound.
func TestReplicasStayWithinBound(t *testing.T) {
	const (
		replicas = 3
		step     = 5 * time.Millisecond
		calls    = 2 // per replica and step: 400 a second each
	)
	intervals := []time.Duration{100 * time.Millisecond, time.Second}
	rules := []quota.Rule{
		{Name: "hot-gcra", Limit: 100, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 20},
		{Name: "hot-fixed", Limit: 50, Window: time.Second},
	}
	loads := []struct {
		name  string
		asked func(replica, step int) bool
	}{
		{"steady", func(int, int) bool { return true }},
		{"turns", func(replica, step int) bool { return step/40%replicas == replica }},
	}
	for _, st := range stores {
		for _, interval := range intervals {
			// At least 3 s, and six intervals.
			steps := int(max(3*time.Second, 6*interval) / step)
			for _, rule := range rules {
				for _, load := range loads {
					t.Run(st.name+"/"+interval.String()+"/"+rule.Algorithm.String()+"/"+load.name, func(t *testing.T) {
						clk := testclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
						var chargers []*asyncquota.Charger
						for _, s := range st.open(t, clk, replicas) {
							chargers = append(chargers, newCharger(t, s, asyncquota.Config{Interval: interval, Now: clk.Now}))
						}
						subject := quota.Subject("hot client")
						admitted := make([]int64, steps)
						phase := int(interval / step)
						for i := range steps {
							for r, c := range chargers {
								if i%phase == r*phase/replicas {
									if err := c.Reconcile(context.Background()); err != nil {
										t.Fatalf("replica %d: Reconcile: %v", r, err)
									}
								}
								for range calls {
									if load.asked(r, i) && allowed(t, c, rule, subject) {
										admitted[i]++
									}
								}
							}
							clk.Advance(step)
						}
						checkBound(t, rule, admitted, step, interval, asyncquota.Bound(rule, replicas, interval))
					})
				}
			}
		}
	}
}

// checkBound checks what admitted holds, calls admitted per step from a
// window's start, against what one exact store lets through plus bound:
// for GCRA over every span of steps, for a fixed window in each window.
// It also wants the whole run to admit at least the budget, less one
// interval's refill (GCRA) or one window's limit, for replicas that
// reconcile every interval.
func checkBound(t *testing.T, rule quota.Rule, admitted []int64, step, interval time.Duration, bound int64) {
	t.Helper()
	prefix := make([]int64, len(admitted)+1)
	for i, a := range admitted {
		prefix[i+1] = prefix[i] + a
	}
	worst := int64(0)
	if rule.Algorithm == quota.FixedWindow {
		per := int(rule.Window / step)
		for a := 0; a < len(admitted); a += per {
			got := prefix[min(a+per, len(admitted))] - prefix[a]
			worst = max(worst, got-int64(rule.Limit))
			if got > int64(rule.Limit)+bound {
				t.Fatalf("window from step %d: admitted %d, want at most %d (the limit) + %d (bound)", a, got, rule.Limit, bound)
			}
		}
	}
	for a := range admitted {
		for b := a + 1; b <= len(admitted) && rule.Algorithm == quota.TokenBucket; b++ {
			got := prefix[b] - prefix[a]
			span := time.Duration(b-a) * step
			exact := int64(rule.BurstOrLimit()) + int64(rule.Limit)*int64(span)/int64(rule.Window)
			worst = max(worst, got-exact)
			if got > exact+bound {
				t.Fatalf("steps %d to %d (%v): admitted %d, want at most %d (exact) + %d (bound)", a, b, span, got, exact, bound)
			}
		}
	}
	run := time.Duration(len(admitted)) * step
	floor := int64(rule.Limit) * int64(run) / int64(rule.Window)
	if rule.Algorithm == quota.TokenBucket {
		floor -= int64(rule.Limit) * int64(interval) / int64(rule.Window)
	} else {
		floor -= int64(rule.Limit)
	}
	if total := prefix[len(admitted)]; total < floor {
		t.Errorf("the whole run admitted %d, want at least %d", total, floor)
	}
	t.Logf("admitted %d in %v; most beyond one exact store: %d calls (bound %d)", prefix[len(admitted)], run, worst, bound)
}

func allowed(t *testing.T, c *asyncquota.Charger, rule quota.Rule, subject string) bool {
	t.Helper()
	d, err := c.Allow(context.Background(), rule, subject)
	if err != nil {
		t.Fatalf("Allow: %v", err)
	}
	return d.Allowed
}

func newCharger(t *testing.T, s quota.Reconciler, cfg asyncquota.Config) *asyncquota.Charger {
	t.Helper()
	c, err := asyncquota.New(s, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}
