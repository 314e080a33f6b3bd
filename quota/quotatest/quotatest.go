package quotatest

import (
	"context"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
)

// Config is how a subtest of [TestCharger] wants the store opened.
type Config struct {
	// Now is the clock the store must read instead of time.Now; the subtest
	// moves it.
	Now func() time.Time
	// Failure is the failure policy the store must follow. Only caller
	// errors are tried, which a store refuses whatever its policy; a store
	// that cannot fail may ignore it.
	Failure quota.Failure
}

// TestCharger runs the behaviour every store shares as subtests of t,
// opening the store under test with open once per subtest (or per case of a
// subtest), with that subtest's t.
//
// open must return two instances of the store on the same storage, which no
// other call of open uses: a fresh schema or table, a fresh key prefix. The
// second stands for another replica: its own client, pool or connections,
// counting in the first one's buckets. It may differ from the first in
// settings that must not change a decision (Redis batching, say). A store
// whose instances cannot share storage, such as one kept in process memory,
// returns the same instance twice. Both instances must use cfg, and a
// timeout generous enough that no call fails on a loaded machine; open
// registers with t.Cleanup whatever must be closed.
func TestCharger(t *testing.T, open func(t *testing.T, cfg Config) (first, second quota.Charger)) {
	t.Helper()
	o := opener(open)
	t.Run("FixedWindowRollover", o.fixedWindowRollover)
	t.Run("GCRABurstThenSteady", o.gcraBurstThenSteady)
	t.Run("MatchesModel", o.matchesModel)
	t.Run("LooksSpendNothing", o.looksSpendNothing)
	t.Run("RefusedGCRAKeepsBucket", o.refusedGCRAKeepsBucket)
	t.Run("CallerErrors", o.callerErrors)
	t.Run("SubjectsFromSubjectOnly", o.subjectsFromSubjectOnly)
	t.Run("AlgorithmsDoNotShareBuckets", o.algorithmsDoNotShareBuckets)
	t.Run("Concurrent", o.concurrent)
	t.Run("AcrossInstances", o.acrossInstances)
	t.Run("Refund", o.refund)
	t.Run("Reconcile", o.reconcile)
}

// opener is the function TestCharger was given; the subtests are its
// methods.
type opener func(t *testing.T, cfg Config) (first, second quota.Charger)

// t0 is aligned to every window the subtests use; the model uses other
// starts too.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// both opens the store with a clock reading start and fails t if open
// returned nil.
func (o opener) both(t *testing.T, start time.Time, failure quota.Failure) (first, second quota.Charger, clk *testclock.Clock) {
	t.Helper()
	clk = testclock.New(start)
	first, second = o(t, Config{Now: clk.Now, Failure: failure})
	if first == nil || second == nil {
		t.Fatalf("open returned %v, %v, want two instances", first, second)
	}
	return first, second, clk
}

// one opens the store with a clock reading start and returns its first
// instance.
func (o opener) one(t *testing.T, start time.Time) (quota.Charger, *testclock.Clock) {
	t.Helper()
	first, _, clk := o.both(t, start, quota.FailClosed)
	return first, clk
}

// allowN calls AllowN and fails t on an error.
func allowN(t *testing.T, s quota.Charger, rule quota.Rule, subject string, n int) quota.Decision {
	t.Helper()
	d, err := s.AllowN(context.Background(), rule, subject, n)
	if err != nil {
		t.Fatalf("AllowN(%q, n=%d): %v", rule.Name, n, err)
	}
	return d
}

// step is one call of a scenario: advance the clock by advance, spend n (0
// looks), and want a decision with these fields and the rule's Limit and
// Window.
type step struct {
	advance    time.Duration
	n          int
	allowed    bool
	remaining  int
	retryAfter time.Duration
}

// runSteps plays steps against s for one subject and checks each decision.
func runSteps(t *testing.T, s quota.Charger, clk *testclock.Clock, rule quota.Rule, steps []step) {
	t.Helper()
	subject := quota.Subject(t.Name())
	for i, st := range steps {
		clk.Advance(st.advance)
		got := allowN(t, s, rule, subject, st.n)
		want := quota.Decision{Allowed: st.allowed, Remaining: st.remaining, RetryAfter: st.retryAfter, Limit: rule.Limit, Window: rule.Window}
		if got != want {
			t.Errorf("step %d (+%v, n=%d): got %+v, want %+v", i, st.advance, st.n, got, want)
		}
	}
}
