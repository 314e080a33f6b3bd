package pgquota_test

import (
	"context"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

// TestReconcileKeepsRowsUntilTheirTAT adds hits past a GCRA bucket's burst,
// time after time: the row must never expire before its tat, or a sweep
// could forget calls admitted beyond the limit.
func TestReconcileKeepsRowsUntilTheirTAT(t *testing.T) {
	db := testpg.New(t)
	pool := db.Pool(t)
	clk := newClock(t0)
	s := newStore(t, pool, pgquota.Config{Now: clk.Now, Timeout: generous})
	rule := quota.Rule{Name: "over", Limit: 10, Window: time.Second, Algorithm: quota.GCRA, Burst: 1}
	subject := quota.Subject("a")
	for i := range 20 {
		tallies := []quota.Tally{{Rule: rule, Subject: subject, Hits: 1 + i%3}}
		if err := s.Reconcile(context.Background(), tallies); err != nil {
			t.Fatal(err)
		}
		var tat int64
		var expires time.Time
		if err := pool.QueryRow(context.Background(), "SELECT tat, expires_at FROM admit_quota WHERE bucket = $1", rule.Name+":"+subject).Scan(&tat, &expires); err != nil {
			t.Fatal(err)
		}
		if got := time.Unix(0, tat); !got.Equal(tallies[0].TAT) {
			t.Fatalf("reconcile %d: the row holds tat %v, the tally says %v", i, got, tallies[0].TAT)
		}
		if expires.Before(time.Unix(0, tat)) {
			t.Fatalf("reconcile %d: the row expires at %v, before its tat %v", i, expires, time.Unix(0, tat))
		}
		clk.Advance(time.Duration(i%4) * 70 * time.Millisecond)
	}
}

// TestReturningClientsUpdateInPlace calls a GCRA bucket of a short burst
// period (100 ms) every 2 s for a minute, by decisions and by reconciles:
// expires_at, the only indexed column an update could change, must move at
// most once in that minute, so that a client who comes back within a
// minute updates its row in place (a HOT update) rather than writing new
// entries in both indexes, and the row must still never expire before its
// tat.
func TestReturningClientsUpdateInPlace(t *testing.T) {
	for _, path := range []string{"decisions", "reconciles"} {
		t.Run(path, func(t *testing.T) {
			pool := testpg.New(t).Pool(t)
			clk := newClock(t0)
			s := newStore(t, pool, pgquota.Config{Now: clk.Now, Timeout: generous})
			rule := quota.Rule{Name: "short", Limit: 10, Window: time.Second, Algorithm: quota.GCRA, Burst: 1}
			subject := quota.Subject("returns")
			var moves int
			var last time.Time
			for i := range 30 {
				if path == "decisions" {
					if d := allowN(t, s, rule, subject, 1); !d.Allowed {
						t.Fatalf("call %d: refused, want allowed", i)
					}
				} else if err := s.Reconcile(context.Background(), []quota.Tally{{Rule: rule, Subject: subject, Hits: 1}}); err != nil {
					t.Fatal(err)
				}
				var tat int64
				var expires time.Time
				if err := pool.QueryRow(context.Background(), "SELECT tat, expires_at FROM admit_quota WHERE bucket = $1", rule.Name+":"+subject).Scan(&tat, &expires); err != nil {
					t.Fatal(err)
				}
				if expires.Before(time.Unix(0, tat)) {
					t.Fatalf("call %d: the row expires at %v, before its tat %v", i, expires, time.Unix(0, tat))
				}
				if i > 0 && !expires.Equal(last) {
					moves++
				}
				last = expires
				clk.Advance(2 * time.Second)
			}
			if moves > 1 {
				t.Errorf("expires_at moved %d times in a minute of calls 2 s apart, want at most once", moves)
			}
		})
	}
}
