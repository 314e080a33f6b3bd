package rls_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/rls/internal/redisproc"
)

// watched is a counter that counts the calls it is asked and those its
// store answered.
type watched struct {
	rls.Counter
	asked, answered atomic.Int64
}

func (w *watched) Count(ctx context.Context, hits []rls.Hit) (time.Time, error) {
	w.asked.Add(1)
	now, err := w.Counter.Count(ctx, hits)
	if err == nil {
		w.answered.Add(1)
	}
	return now, err
}

// TestRedisBlackHoled pauses a Redis server (SIGSTOP) under a steady load
// of calls, under each policy: after the first failure no call but one
// probe a second waits for the store's timeout, and once the server runs
// again the calls go back to it within 2 s.
func TestRedisBlackHoled(t *testing.T) {
	srv := redisproc.Start(t)
	opt := testredis.Options(t)
	opt.Addr, opt.Username, opt.Password, opt.DB = srv.Addr, "", "", 0
	client := redis.NewClient(opt)
	t.Cleanup(func() { client.Close() })
	// fast bounds the calls that did not wait for the store: its timeout
	// is 100 ms. The race detector slows every call down, and with it the
	// test shares two cores with the rest of the suite: half the store's
	// timeout still tells a call that waited for it from one that did not.
	fast := 5 * time.Millisecond
	if raceEnabled {
		fast = 50 * time.Millisecond
	}
	const (
		every  = 5 * time.Millisecond // the load's pace
		outage = 1500 * time.Millisecond
	)
	for _, failure := range []rls.Failure{rls.FailError, rls.FailClosed, rls.FailOpen, rls.FailLocal} {
		t.Run(failure.String(), func(t *testing.T) {
			c, err := redisquota.NewCounter(client, redisquota.CounterConfig{Prefix: "rls:" + failure.String() + ":"})
			if err != nil {
				t.Fatal(err)
			}
			store := &watched{Counter: c}
			f := newFixture(t, rls.Options{Counter: store, Failure: failure})
			n := 0
			call := func() time.Duration {
				n++
				start := time.Now()
				f.svc.ShouldRateLimit(context.Background(), req("edge", desc("user", fmt.Sprint("u", n))))
				return time.Since(start)
			}
			if call(); store.answered.Load() != 1 {
				t.Fatal("the store did not answer before the outage")
			}

			srv.Pause(t)
			paused := time.Now()
			tick := time.NewTicker(every)
			defer tick.Stop()
			var took []time.Duration
			for time.Since(paused) < outage {
				took = append(took, call())
				<-tick.C
			}
			if store.answered.Load() != 1 {
				t.Fatal("the store answered while paused")
			}
			// The first call waits; then one probe a second.
			maxAsked := int64(1 + outage/time.Second + 1)
			if got := store.asked.Load() - 1; got > maxAsked {
				t.Errorf("the paused store was asked %d times in %v, want at most %d", got, outage, maxAsked)
			}
			slices.Sort(took)
			p99 := took[len(took)*99/100]
			t.Logf("%d calls with the store paused: p50 %v, p99 %v, max %v", len(took), took[len(took)/2], p99, took[len(took)-1])
			if p99 > fast {
				t.Errorf("p99 of %d calls with the store paused = %v, want under %v", len(took), p99, fast)
			}
			if slow := len(took) - len(slices.DeleteFunc(slices.Clone(took), func(d time.Duration) bool { return d > fast })); int64(slow) > maxAsked {
				t.Errorf("%d calls took over %v, want at most the %d that asked the store: %v", slow, fast, maxAsked, took[len(took)-slow:])
			}

			srv.Resume(t)
			resumed := time.Now()
			for store.answered.Load() == 1 && time.Since(resumed) < 5*time.Second {
				call()
				<-tick.C
			}
			back := time.Since(resumed)
			t.Logf("back on the store %v after it ran again", back)
			if back > 2*time.Second {
				t.Errorf("calls went back to the store %v after it ran again, want within 2s", back)
			}
		})
	}
}
