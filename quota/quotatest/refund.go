package quotatest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

// refund wants a refund to give back exactly what it names: GCRA tokens
// and a fixed window's count, never beyond what an untouched bucket holds,
// and caller errors refused. The second instance refunds what the first
// spent, as another replica would.
func (o opener) refund(t *testing.T) {
	ctx := context.Background()
	for _, rule := range []quota.Rule{
		{Name: "refund-fixed", Limit: 3, Window: time.Minute},
		{Name: "refund-gcra", Limit: 3, Window: time.Minute, Algorithm: quota.TokenBucket},
	} {
		t.Run(rule.Algorithm.String(), func(t *testing.T) {
			first, second, clk := o.both(t, t0, quota.FailClosed)
			subject := quota.Subject("refunded")
			for range 3 {
				allowN(t, first, rule, subject, 1)
			}
			if d := allowN(t, first, rule, subject, 0); d.Allowed {
				t.Fatalf("after the limit: a look says allowed, want refused")
			}
			if err := second.Refund(ctx, rule, subject, 2); err != nil {
				t.Fatalf("Refund: %v", err)
			}
			if d := allowN(t, first, rule, subject, 0); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("after a refund of 2: got allowed %v, remaining %d, want allowed with 2", d.Allowed, d.Remaining)
			}
			// More than was spent leaves a full bucket, no more.
			if err := first.Refund(ctx, rule, subject, 10); err != nil {
				t.Fatalf("Refund: %v", err)
			}
			if d := allowN(t, first, rule, subject, 0); d.Remaining != rule.Limit {
				t.Errorf("after refunding more than was spent: remaining %d, want the limit %d", d.Remaining, rule.Limit)
			}
			allowed := 0
			for range 5 {
				if allowN(t, first, rule, subject, 1).Allowed {
					allowed++
				}
			}
			if allowed != rule.Limit {
				t.Errorf("after the refunds: %d allowed, want the limit %d", allowed, rule.Limit)
			}
			// A refund of nothing, or of a bucket never seen, changes nothing.
			if err := first.Refund(ctx, rule, quota.Subject("never seen"), 1); err != nil {
				t.Errorf("Refund of an unseen bucket: %v", err)
			}
			if d := allowN(t, first, rule, quota.Subject("never seen"), 0); d.Remaining != rule.Limit {
				t.Errorf("unseen bucket after a refund: remaining %d, want %d", d.Remaining, rule.Limit)
			}
			// A refund of 0 changes nothing, in this window or the next.
			clk.Advance(rule.Window)
			allowN(t, first, rule, subject, 1)
			if err := first.Refund(ctx, rule, subject, 0); err != nil {
				t.Errorf("Refund of 0: %v", err)
			}
			if d := allowN(t, first, rule, subject, 0); d.Remaining != rule.Limit-1 {
				t.Errorf("after a refund of 0: remaining %d, want %d", d.Remaining, rule.Limit-1)
			}
			if err := first.Refund(ctx, rule, "raw subject", 1); !errors.Is(err, quota.ErrSubject) {
				t.Errorf("Refund of a raw subject: got %v, want %v", err, quota.ErrSubject)
			}
			if err := first.Refund(ctx, rule, subject, -1); !errors.Is(err, quota.ErrRule) {
				t.Errorf("Refund of a negative count: got %v, want %v", err, quota.ErrRule)
			}
		})
	}
}
