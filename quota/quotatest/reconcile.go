package quotatest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

// reconcile wants a [quota.Reconciler]'s tallies to add their hits without
// deciding them, past the limit if they must, to report the state the
// store's decisions then see, and reads (0 hits) to change nothing. The
// second instance reads what the first added, as another replica would.
// A store that is no Reconciler skips nothing: the subtest is not run.
func (o opener) reconcile(t *testing.T) {
	ctx := context.Background()
	first, second, clk := o.both(t, t0.Add(10*time.Second), quota.FailClosed)
	r1, ok1 := first.(quota.Reconciler)
	r2, ok2 := second.(quota.Reconciler)
	if !ok1 || !ok2 {
		return
	}
	fixed := quota.Rule{Name: "tally-fixed", Limit: 5, Window: time.Minute}
	gcra := quota.Rule{Name: "tally-gcra", Limit: 10, Window: 10 * time.Second, Algorithm: quota.TokenBucket, Burst: 4}
	a, b := quota.Subject("a"), quota.Subject("b")
	now := clk.Now()

	tallies := []quota.Tally{
		{Rule: fixed, Subject: a, Hits: 3},
		{Rule: fixed, Subject: b},
		{Rule: gcra, Subject: a, Hits: 6}, // two past the burst
		{Rule: gcra, Subject: b},
	}
	if err := r1.Reconcile(ctx, tallies); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	want := []quota.Tally{
		{Rule: fixed, Subject: a, Hits: 3, Now: now, Count: 3},
		{Rule: fixed, Subject: b, Now: now},
		{Rule: gcra, Subject: a, Hits: 6, Now: now, TAT: now.Add(6 * time.Second)},
		{Rule: gcra, Subject: b, Now: now},
	}
	for i := range want {
		if !sameTally(tallies[i], want[i]) {
			t.Errorf("tally %d: got %+v, want %+v", i, tallies[i], want[i])
		}
	}
	// The other replica's decisions see the hits: 2 left in the window, and
	// a GCRA bucket overdrawn by two calls refuses until 2 s have paid them
	// back and one token has refilled.
	if d := allowN(t, second, fixed, a, 0); d.Remaining != 2 {
		t.Errorf("fixed window after 3 hits: got %+v, want 2 remaining", d)
	}
	if d := allowN(t, second, gcra, a, 1); d.Allowed || d.RetryAfter != 3*time.Second {
		t.Errorf("gcra overdrawn by 2: got %+v, want refused with RetryAfter 3s", d)
	}
	clk.Advance(3 * time.Second)
	if d := allowN(t, second, gcra, a, 1); !d.Allowed || d.Remaining != 0 {
		t.Errorf("gcra 3s later: got %+v, want allowed with 0 remaining", d)
	}
	// A read from the other replica reports what the decisions left, and
	// changes nothing.
	reads := []quota.Tally{{Rule: fixed, Subject: a}, {Rule: gcra, Subject: a}}
	for range 2 {
		if err := r2.Reconcile(ctx, reads); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	now = clk.Now()
	if got := reads[0]; got.Count != 3 || !got.Now.Equal(now) {
		t.Errorf("fixed read: got %+v, want count 3 at %v", got, now)
	}
	if got := reads[1]; !got.TAT.Equal(now.Add(4 * time.Second)) {
		t.Errorf("gcra read: got tat %v, want %v", got.TAT, now.Add(4*time.Second))
	}
	// Caller errors count nothing.
	for _, bad := range []quota.Tally{
		{Rule: fixed, Subject: "raw", Hits: 1},
		{Rule: fixed, Subject: a, Hits: -1},
		{Rule: quota.Rule{Name: "zero"}, Subject: a, Hits: 1},
	} {
		err := r1.Reconcile(ctx, []quota.Tally{{Rule: fixed, Subject: b, Hits: 1}, bad})
		if !errors.Is(err, quota.ErrRule) && !errors.Is(err, quota.ErrSubject) {
			t.Errorf("Reconcile with %+v: got %v, want a caller error", bad, err)
		}
	}
	dup := []quota.Tally{{Rule: fixed, Subject: b, Hits: 1}, {Rule: fixed, Subject: b, Hits: 1}}
	if err := r1.Reconcile(ctx, dup); !errors.Is(err, quota.ErrRule) {
		t.Errorf("Reconcile with a bucket twice: got %v, want %v", err, quota.ErrRule)
	}
	if d := allowN(t, first, fixed, b, 0); d.Remaining != fixed.Limit {
		t.Errorf("after refused reconciles: got %+v, want %d remaining", d, fixed.Limit)
	}
}

// sameTally compares tallies with times by instant.
func sameTally(a, b quota.Tally) bool {
	return a.Rule == b.Rule && a.Subject == b.Subject && a.Hits == b.Hits && a.Count == b.Count &&
		a.Now.Equal(b.Now) && a.TAT.Equal(b.TAT)
}
