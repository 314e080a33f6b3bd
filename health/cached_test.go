package health

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"connectrpc.com/grpchealth"

	"github.com/admitgo/admit/internal/testclock"
)

// newClock returns a manual clock for Cached's now argument.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
}

// counter is an inner checker that counts its calls per service and answers
// with a settable status. If gate is not nil, each call waits for it.
type counter struct {
	calls  sync.Map // service -> *atomic.Int64
	status atomic.Uint32
	err    error
	gate   chan struct{}
}

func (c *counter) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	n, _ := c.calls.LoadOrStore(req.Service, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	return &grpchealth.CheckResponse{Status: grpchealth.Status(c.status.Load())}, nil
}

func (c *counter) set(s grpchealth.Status) { c.status.Store(uint32(s)) }

func (c *counter) count(service string) int64 {
	n, ok := c.calls.Load(service)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// check calls checker for service and fails the test on an error.
func check(t *testing.T, checker grpchealth.Checker, service string) grpchealth.Status {
	t.Helper()
	res, err := checker.Check(t.Context(), &grpchealth.CheckRequest{Service: service})
	if err != nil {
		t.Fatalf("Check(%q): %v", service, err)
	}
	return res.Status
}

// checkAsync is check for goroutines other than the test's: it reports an
// error without stopping the test, and answers StatusUnknown then.
func checkAsync(t *testing.T, checker grpchealth.Checker, service string) grpchealth.Status {
	t.Helper()
	res, err := checker.Check(t.Context(), &grpchealth.CheckRequest{Service: service})
	if err != nil {
		t.Errorf("Check(%q): %v", service, err)
		return grpchealth.StatusUnknown
	}
	return res.Status
}

func TestCachedCallsInnerOncePerTTL(t *testing.T) {
	const ttl = time.Second
	inner := &counter{}
	inner.set(grpchealth.StatusServing)
	clk := newClock()
	c := Cached(inner, nil, ttl, clk.Now)

	steps := []struct {
		name    string
		advance time.Duration
		service string
		set     grpchealth.Status
		want    grpchealth.Status
		calls   int64 // inner calls for service after the step
	}{
		{"first call fills", 0, "", grpchealth.StatusServing, grpchealth.StatusServing, 1},
		{"same instant is cached", 0, "", grpchealth.StatusServing, grpchealth.StatusServing, 1},
		{"change hidden until ttl", ttl - time.Nanosecond, "", grpchealth.StatusNotServing, grpchealth.StatusServing, 1},
		{"other service has its own entry", 0, "db", grpchealth.StatusNotServing, grpchealth.StatusNotServing, 1},
		{"expiry refreshes", time.Nanosecond, "", grpchealth.StatusNotServing, grpchealth.StatusNotServing, 2},
		{"refreshed entry is cached", ttl / 2, "", grpchealth.StatusServing, grpchealth.StatusNotServing, 2},
		{"other service still cached", 0, "db", grpchealth.StatusServing, grpchealth.StatusNotServing, 1},
		{"long idle refreshes once", 10 * ttl, "", grpchealth.StatusServing, grpchealth.StatusServing, 3},
		{"and again only after ttl", 0, "", grpchealth.StatusNotServing, grpchealth.StatusServing, 3},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		inner.set(s.set)
		if got := check(t, c, s.service); got != s.want {
			t.Errorf("%s: got %v, want %v", s.name, got, s.want)
		}
		if got := inner.count(s.service); got != s.calls {
			t.Errorf("%s: inner calls for %q: got %v, want %v", s.name, s.service, got, s.calls)
		}
	}
}

func TestCachedZeroArguments(t *testing.T) {
	inner := &counter{}
	inner.set(grpchealth.StatusServing)
	c := Cached(inner, nil, 0, nil) // never draining, DefaultTTL, time.Now
	for range 3 {
		if got, want := check(t, c, ""), grpchealth.StatusServing; got != want {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Three calls well within DefaultTTL of real time reach the inner checker once.
	if got, want := inner.count(""), int64(1); got != want {
		t.Errorf("inner calls: got %v, want %v", got, want)
	}
}

func TestCachedNilInnerPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Cached(nil, ...) did not panic")
		}
	}()
	Cached(nil, nil, time.Second, nil)
}

func TestCachedDrainShowsAtOnce(t *testing.T) {
	inner := &counter{}
	inner.set(grpchealth.StatusServing)
	clk := newClock()
	var draining atomic.Bool
	c := Cached(inner, draining.Load, time.Hour, clk.Now)

	if got, want := check(t, c, ""), grpchealth.StatusServing; got != want {
		t.Fatalf("before drain: got %v, want %v", got, want)
	}
	draining.Store(true)
	for _, service := range []string{"", "db", "never-seen"} {
		if got, want := check(t, c, service), grpchealth.StatusNotServing; got != want {
			t.Errorf("draining, service %q: got %v, want %v", service, got, want)
		}
	}
	if got, want := inner.count(""), int64(1); got != want {
		t.Errorf("inner calls while draining: got %v, want %v", got, want)
	}
}

func TestCachedSingleRefresh(t *testing.T) {
	const waiters = 50
	tests := []struct {
		name  string
		warm  bool  // an earlier answer is cached (and expired) when the callers arrive
		calls int64 // inner calls in total
	}{
		// With nothing cached, callers wait for the one refresh in flight.
		{"cold entry", false, 1},
		// With an expired answer, callers get it at once while one refreshes.
		{"expired entry", true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl = time.Second
				inner := &counter{gate: make(chan struct{})}
				inner.set(grpchealth.StatusNotServing)
				clk := newClock()
				c := Cached(inner, nil, ttl, clk.Now)
				if tt.warm {
					go func() { inner.gate <- struct{}{} }()
					check(t, c, "")
					clk.Advance(ttl)
				}
				inner.set(grpchealth.StatusServing)

				got := make(chan grpchealth.Status, waiters+1)
				go func() { got <- checkAsync(t, c, "") }() // the refresher
				synctest.Wait()
				for range waiters {
					go func() { got <- checkAsync(t, c, "") }()
				}
				synctest.Wait()
				if n := inner.count(""); n != tt.calls {
					t.Errorf("inner calls during refresh: got %v, want %v", n, tt.calls)
				}
				close(inner.gate)
				serving := 0
				for range waiters + 1 {
					if <-got == grpchealth.StatusServing {
						serving++
					}
				}
				want := waiters + 1 // everyone waited for the refresh
				if tt.warm {
					want = 1 // only the refresher saw the new answer
				}
				if serving != want {
					t.Errorf("callers answered SERVING: got %v, want %v", serving, want)
				}
				if n := inner.count(""); n != tt.calls {
					t.Errorf("inner calls: got %v, want %v", n, tt.calls)
				}
			})
		})
	}
}

func TestCachedWaiterLeavesWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &counter{gate: make(chan struct{})}
		c := Cached(inner, nil, time.Second, newClock().Now)
		go checkAsync(t, c, "") // the refresher, blocked in the inner checker
		synctest.Wait()

		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := c.Check(ctx, &grpchealth.CheckRequest{})
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("waiter error: got %v, want %v", err, context.Canceled)
		}
		close(inner.gate)
	})
}

func TestCachedErrors(t *testing.T) {
	clk := newClock()
	boom := errors.New("boom")
	inner := &counter{err: boom}
	c := Cached(inner, nil, time.Second, clk.Now)

	for range 2 {
		if _, err := c.Check(t.Context(), &grpchealth.CheckRequest{}); !errors.Is(err, boom) {
			t.Fatalf("got %v, want %v", err, boom)
		}
	}
	// An error is an answer too: a failing inner checker is not called again
	// before the ttl runs out.
	if got, want := inner.count(""), int64(1); got != want {
		t.Errorf("inner calls: got %v, want %v", got, want)
	}

	// A refresh cut short by its caller's context is not cached: the next
	// caller asks again.
	inner = &counter{}
	inner.set(grpchealth.StatusServing)
	c = Cached(inner, nil, time.Second, clk.Now)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	inner.err = context.Canceled
	if _, err := c.Check(ctx, &grpchealth.CheckRequest{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: got %v, want %v", err, context.Canceled)
	}
	inner.err = nil
	if got, want := check(t, c, ""), grpchealth.StatusServing; got != want {
		t.Errorf("after a cancelled refresh: got %v, want %v", got, want)
	}
	if got, want := inner.count(""), int64(2); got != want {
		t.Errorf("inner calls: got %v, want %v", got, want)
	}
}

func TestCachedBoundsServices(t *testing.T) {
	clk := newClock()
	inner := &counter{}
	inner.set(grpchealth.StatusServing)
	cc := Cached(inner, nil, time.Second, clk.Now).(*cached)

	for i := range 3 * MaxServices {
		check(t, cc, string(rune('a'+i%26))+string(rune('A'+i/26)))
	}
	if got := len(cc.entries); got > MaxServices {
		t.Errorf("cached services: got %v, want at most %v", got, MaxServices)
	}
	// Once the ttl has passed, expired entries make room for new names.
	clk.Advance(time.Second)
	check(t, cc, "late")
	check(t, cc, "late")
	if got, want := inner.count("late"), int64(1); got != want {
		t.Errorf("inner calls for a name after expiry: got %v, want %v", got, want)
	}
}

// panicky is a checker that panics on its first call and serves afterwards.
type panicky struct{ calls atomic.Int64 }

func (p *panicky) Check(context.Context, *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if p.calls.Add(1) == 1 {
		panic("inner checker bug")
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

func TestCachedInnerPanicReleasesRefresh(t *testing.T) {
	inner := &panicky{}
	c := Cached(inner, nil, time.Second, newClock().Now)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the inner checker's panic did not reach its caller")
			}
		}()
		c.Check(t.Context(), &grpchealth.CheckRequest{})
	}()
	// The panic left no refresh in flight and no answer: the next caller asks.
	if got, want := check(t, c, ""), grpchealth.StatusServing; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if got, want := inner.calls.Load(), int64(2); got != want {
		t.Errorf("inner calls: got %v, want %v", got, want)
	}
}
