package rls_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/connect"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/rls"
)

// tally is a memory counter that records the windows of the hits it was
// asked to count.
type tally struct {
	rls.Counter
	windows []time.Duration
}

func (c *tally) Count(ctx context.Context, hits []rls.Hit) (time.Time, error) {
	for _, h := range hits {
		c.windows = append(c.windows, h.Window)
	}
	return c.Counter.Count(ctx, hits)
}

// TestPerSecondCounter counts the hits of a second's limit on
// PerSecondCounter and the others on Counter, as envoyproxy/ratelimit's
// REDIS_PERSECOND does, answering each descriptor from its own store in
// the request's order.
func TestPerSecondCounter(t *testing.T) {
	newTally := func() *tally {
		c, err := memquota.NewCounter(memquota.CounterConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return &tally{Counter: c}
	}
	main, second := newTally(), newTally()
	f := newFixture(t, rls.Options{Counter: main, PerSecondCounter: second})
	r := func() *pb.RateLimitRequest { return req("edge", desc("path", "/admin/x"), desc("user", "ann")) }
	for i, want := range []struct {
		admin, user pb.RateLimitResponse_Code
		left        uint32
	}{{pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, 1}, {pb.RateLimitResponse_OVER_LIMIT, pb.RateLimitResponse_OK, 0}} {
		st := f.decide(t, r()).GetStatuses()
		if st[0].GetCode() != want.admin || st[1].GetCode() != want.user || st[1].GetLimitRemaining() != want.left {
			t.Fatalf("request %d: got %v, %v (%d left); want %v, %v (%d left)", i+1, st[0].GetCode(), st[1].GetCode(), st[1].GetLimitRemaining(), want.admin, want.user, want.left)
		}
	}
	for name, c := range map[string]*tally{"per-second": second, "main": main} {
		for _, w := range c.windows {
			if (w == time.Second) != (c == second) {
				t.Errorf("the %s counter counted a window of %v", name, w)
			}
		}
		if len(c.windows) != 2 {
			t.Errorf("the %s counter counted %d hits, want 2", name, len(c.windows))
		}
	}
}

// TestPerSecondStoreDown: while the per-second store fails, a request that
// needs only the main store is counted as usual, and one that needs the
// per-second store gets the failure policy without waiting for its
// timeout after the first failure; each store has its own breaker.
func TestPerSecondStoreDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := new(blackHole)
		f := newFixture(t, rls.Options{PerSecondCounter: down, Failure: rls.FailError})
		admin := func() *pb.RateLimitRequest { return req("edge", desc("path", "/admin/x")) }
		for i := range 3 {
			start := time.Now()
			_, err := f.svc.ShouldRateLimit(context.Background(), admin())
			if connect.CodeOf(err) != connect.CodeUnavailable {
				t.Fatalf("call %d to the per-second store: got %v, want UNAVAILABLE", i+1, err)
			}
			if waited := time.Since(start); i > 0 && waited > 0 {
				t.Errorf("call %d waited %v for a store that is down", i+1, waited)
			}
		}
		if n := down.calls.Load(); n != 1 {
			t.Errorf("the per-second store was asked %d times, want 1 until its probe is due", n)
		}
		for i := range 2 {
			st := f.decide(t, req("edge", desc("user", "ann"))).GetStatuses()
			if st[0].GetCode() != pb.RateLimitResponse_OK || st[0].GetLimitRemaining() != uint32(1-i) {
				t.Fatalf("user call %d beside the outage: got %v, %d left", i+1, st[0].GetCode(), st[0].GetLimitRemaining())
			}
		}
		down.up.Store(true)
		time.Sleep(time.Second) // past the probe interval, on the bubble's clock
		if _, err := f.svc.ShouldRateLimit(context.Background(), admin()); err != nil {
			t.Errorf("after the store came back: %v", err)
		}
	})
}

// TestMainStoreBackBesideADownPerSecondStore: once the main store answers
// a probe again, it is asked again, even when the call that probed it
// also needed the per-second store, which still fails.
func TestMainStoreBackBesideADownPerSecondStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		main, second := new(blackHole), new(blackHole)
		f := newFixture(t, rls.Options{Counter: main, PerSecondCounter: second, Failure: rls.FailError})
		user := func() *pb.RateLimitRequest { return req("edge", desc("user", "ann")) }
		if _, err := f.svc.ShouldRateLimit(context.Background(), user()); connect.CodeOf(err) != connect.CodeUnavailable {
			t.Fatalf("main store down: got %v, want UNAVAILABLE", err)
		}
		main.up.Store(true)
		time.Sleep(time.Second) // past the probe interval, on the bubble's clock
		both := req("edge", desc("path", "/admin/x"), desc("user", "ann"))
		if _, err := f.svc.ShouldRateLimit(context.Background(), both); connect.CodeOf(err) != connect.CodeUnavailable {
			t.Fatalf("per-second store down: got %v, want UNAVAILABLE", err)
		}
		asked := main.calls.Load()
		if _, err := f.svc.ShouldRateLimit(context.Background(), user()); err != nil {
			t.Errorf("main store back: got %v, want counted", err)
		}
		if main.calls.Load() != asked+1 {
			t.Errorf("the main store was not asked once it answered again")
		}
	})
}
