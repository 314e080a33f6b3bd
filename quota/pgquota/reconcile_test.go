package pgquota_test

import (
	"context"
	"fmt"
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
	rule := quota.Rule{Name: "over", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 1}
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

// TestReturningClientsUpdateInPlace calls GCRA buckets every 2 s for 80 s,
// by decisions and by reconciles, and reads expires_at, the only indexed
// column an update could change, after every call. On a bucket of a short
// burst period (100 ms) it must move exactly once (when the first minute
// has run down), so that a client who comes back within a minute updates
// its row in place (a HOT update) rather than writing new entries in both
// indexes; on one of a burst period longer than the run (5 min) it moves
// by the burst period, so never; and the row must never expire before its
// tat. The reconciles add past the burst too, so that the tat runs ahead
// of the clock and expires_at moves when the tat passes it.
func TestReturningClientsUpdateInPlace(t *testing.T) {
	short := quota.Rule{Name: "short", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 1}
	long := quota.Rule{Name: "long", Limit: 100, Window: time.Minute, Algorithm: quota.TokenBucket, Burst: 500}
	for _, tc := range []struct {
		path  string
		rule  quota.Rule
		hits  int
		moves int
	}{
		{"decisions", short, 1, 1},
		{"decisions", long, 1, 0},
		{"reconciles", short, 1, 1},
		{"reconciles", long, 1, 0},
		// 25 hits of 100 ms every 2 s: the tat gains 0.5 s a call on the
		// clock, and expires_at follows it a minute ahead.
		{"reconciles", short, 25, 1},
	} {
		t.Run(fmt.Sprintf("%s/%s/hits=%d", tc.path, tc.rule.Name, tc.hits), func(t *testing.T) {
			pool := testpg.New(t).Pool(t)
			clk := newClock(t0)
			s := newStore(t, pool, pgquota.Config{Now: clk.Now, Timeout: generous})
			subject := quota.Subject("returns")
			var moves int
			var last time.Time
			for i := range 41 {
				if tc.path == "decisions" {
					if d := allowN(t, s, tc.rule, subject, 1); !d.Allowed {
						t.Fatalf("call %d: refused, want allowed", i)
					}
				} else if err := s.Reconcile(context.Background(), []quota.Tally{{Rule: tc.rule, Subject: subject, Hits: tc.hits}}); err != nil {
					t.Fatal(err)
				}
				var tat int64
				var expires time.Time
				if err := pool.QueryRow(context.Background(), "SELECT tat, expires_at FROM admit_quota WHERE bucket = $1", tc.rule.Name+":"+subject).Scan(&tat, &expires); err != nil {
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
			if moves != tc.moves {
				t.Errorf("expires_at moved %d times in 80 s of calls 2 s apart, want %d", moves, tc.moves)
			}
		})
	}
}
