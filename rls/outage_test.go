package rls_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/rls"
)

// storeTimeout is how long a black-holed store keeps a call, as the
// stores' own timeouts do.
const storeTimeout = 100 * time.Millisecond

// blackHole is a store that, while it is not up, answers no call until
// the call's timeout, and counts the calls it gets: as a counter, and as
// a limiter that decides in memory while up.
type blackHole struct {
	quota.Charger
	up    atomic.Bool
	calls atomic.Int64
}

// wait holds a call until the store's timeout unless the store is up.
func (b *blackHole) wait(ctx context.Context) error {
	b.calls.Add(1)
	if b.up.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	<-ctx.Done()
	return fmt.Errorf("store unreachable: %w", ctx.Err())
}

func (b *blackHole) Count(ctx context.Context, hits []rls.Hit) (time.Time, error) {
	if err := b.wait(ctx); err != nil {
		return time.Time{}, err
	}
	for i := range hits {
		hits[i].Count = hits[i].N
	}
	return time.Now(), nil
}

func (b *blackHole) AllowN(ctx context.Context, r quota.Rule, s string, n int) (quota.Decision, error) {
	if err := b.wait(ctx); err != nil {
		return quota.Decision{}, err
	}
	return b.Charger.AllowN(ctx, r, s, n)
}

// TestDownStoreIsNotAsked black-holes the counter, and the token buckets'
// limiter, under each policy: after the first failure no call waits for
// the store's timeout, one call each half second probes it, and once it answers
// calls go to it again. Each call's descriptor is a new client's, so that
// every answer is the policy's for an untouched limit.
func TestDownStoreIsNotAsked(t *testing.T) {
	for _, front := range []string{"user", "client"} {
		for _, tc := range []struct {
			failure rls.Failure
			code    connect.Code // 0: answered
			status  pb.RateLimitResponse_Code
			left    uint32
		}{
			{rls.FailError, connect.CodeUnavailable, 0, 0},
			{rls.FailClosed, 0, pb.RateLimitResponse_OVER_LIMIT, 0},
			{rls.FailOpen, 0, pb.RateLimitResponse_OK, 2},
			{rls.FailLocal, 0, pb.RateLimitResponse_OK, 1},
		} {
			t.Run(front+"/"+tc.failure.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					mem, err := memquota.New(memquota.Config{})
					if err != nil {
						t.Fatal(err)
					}
					store := &blackHole{Charger: mem}
					f := newFixture(t, rls.Options{Config: parseBuckets(t), Counter: store, Limiter: store, Failure: tc.failure})
					n := 0
					// call decides a new client's request, and returns how
					// long it took.
					call := func(want func(resp *pb.RateLimitResponse, err error)) time.Duration {
						t.Helper()
						n++
						start := time.Now()
						resp, err := f.svc.ShouldRateLimit(context.Background(), req("edge", desc(front, fmt.Sprint("c", n))))
						want(resp, err)
						return time.Since(start)
					}
					policy := func(resp *pb.RateLimitResponse, err error) {
						t.Helper()
						if tc.code != 0 {
							if connect.CodeOf(err) != tc.code {
								t.Fatalf("call %d: got %v, want %v", n, err, tc.code)
							}
							return
						}
						if err != nil {
							t.Fatalf("call %d: %v", n, err)
						}
						if st := resp.GetStatuses()[0]; st.GetCode() != tc.status || st.GetLimitRemaining() != tc.left {
							t.Fatalf("call %d: got %v, want %v with %d left", n, st, tc.status, tc.left)
						}
					}
					fromStore := func(resp *pb.RateLimitResponse, err error) {
						t.Helper()
						if err != nil {
							t.Fatalf("call %d: %v", n, err)
						}
						if st := resp.GetStatuses()[0]; st.GetCode() != pb.RateLimitResponse_OK || st.GetLimitRemaining() != 1 {
							t.Fatalf("call %d: got %v, want OK with 1 left", n, st)
						}
					}
					asked := func(want int64) {
						t.Helper()
						if got := store.calls.Load(); got != want {
							t.Fatalf("after call %d: the store was asked %d times, want %d", n, got, want)
						}
					}

					if d := call(policy); d != storeTimeout {
						t.Fatalf("the first call took %v, want the store's timeout %v", d, storeTimeout)
					}
					asked(1)
					const calls = 20
					for range calls {
						if d := call(policy); d != 0 {
							t.Fatalf("call %d, with the store down, took %v, want no wait", n, d)
						}
					}
					asked(1)
					if got := f.sum(t, "admit.rls.store_failures", "admit.rls.policy", tc.failure.String()); got != 1+calls {
						t.Fatalf("store_failures = %d, want %d: every call the store did not decide", got, 1+calls)
					}

					time.Sleep(time.Second)
					if d := call(policy); d != storeTimeout {
						t.Fatalf("the probe a second later took %v, want the store's timeout %v", d, storeTimeout)
					}
					asked(2)
					if d := call(policy); d != 0 {
						t.Fatalf("the call after a failed probe took %v, want no wait", d)
					}
					asked(2)

					store.up.Store(true)
					time.Sleep(time.Second)
					call(fromStore)
					asked(3)
					call(fromStore)
					call(fromStore)
					asked(5)
				})
			})
		}
	}
}

// TestShortCallerDeadlineStillSeesTheOutage: Envoy's rate limit filter
// gives up after 20 ms by default, sooner than a store's timeout. The
// store's call runs to its own timeout all the same, so the outage is
// seen, and the calls after it do not ask the store.
func TestShortCallerDeadlineStillSeesTheOutage(t *testing.T) {
	for _, front := range []string{"user", "client"} {
		t.Run(front, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, err := memquota.New(memquota.Config{})
				if err != nil {
					t.Fatal(err)
				}
				store := &blackHole{Charger: mem}
				f := newFixture(t, rls.Options{Config: parseBuckets(t), Counter: store, Limiter: store, Failure: rls.FailOpen})
				for i := range 10 {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
					f.svc.ShouldRateLimit(ctx, req("edge", desc(front, fmt.Sprint("c", i))))
					cancel()
				}
				if got := store.calls.Load(); got != 1 {
					t.Errorf("the store was asked %d times by 10 calls that each gave up after 20 ms, want 1: the outage was never seen", got)
				}
			})
		})
	}
}
