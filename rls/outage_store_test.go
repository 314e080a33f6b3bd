package rls_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/storedown"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/rls"
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

// outageStore opens a counter on a private server, with a client or pool
// of its own that the test closes.
type outageStore struct {
	name  string
	start func(t *testing.T) *testserver.Server
	open  func(t *testing.T, srv *testserver.Server, prefix string) rls.Counter
}

var outageStores = []outageStore{
	{"redis", func(t *testing.T) *testserver.Server { return testserver.Redis(t) },
		func(t *testing.T, srv *testserver.Server, prefix string) rls.Counter {
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
			t.Cleanup(func() { client.Close() })
			c, err := redisquota.NewCounter(client, redisquota.CounterConfig{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
	{"postgres", func(t *testing.T) *testserver.Server { return testserver.Postgres(t) },
		func(t *testing.T, srv *testserver.Server, _ string) rls.Counter {
			cfg, err := pgxpool.ParseConfig(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			// A paused server accepts and never answers: the bound keeps
			// a dial from outliving the test by much.
			cfg.ConnConfig.ConnectTimeout = time.Second
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			s, err := pgquota.New(pool, pgquota.Config{})
			if err == nil {
				err = s.Migrate(context.Background())
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := pgquota.NewCounter(pool, pgquota.CounterConfig{})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
}

// TestStoreOutage black-holes (SIGSTOP) and refuses (the server stopped)
// a private Redis and a private PostgreSQL under a steady load of calls,
// under each policy: after the first failure no call but the probes, one
// each storedown.Every, waits for the store's timeout (p99 under 5 ms;
// 50 ms under -race), and once the server runs again the calls go back to
// it within 2 s.
func TestStoreOutage(t *testing.T) {
	// fast bounds the calls that did not wait for the store: its timeout
	// is 100 ms or more. The race detector slows every call down, and with
	// it the test shares two cores with the rest of the suite: half the
	// store's timeout still tells a call that waited for it from one that
	// did not.
	fast := 5 * time.Millisecond
	if raceEnabled {
		fast = 50 * time.Millisecond
	}
	const (
		every  = time.Millisecond // the load's pace
		outage = 3 * time.Second
	)
	for _, st := range outageStores {
		t.Run(st.name, func(t *testing.T) {
			srv := st.start(t)
			for _, blackHole := range []bool{true, false} {
				stop, start, how := srv.Stop, srv.Start, "refused"
				if blackHole {
					stop, start, how = srv.Pause, srv.Resume, "black-holed"
				}
				for _, failure := range []quota.Failure{quota.FailError, quota.FailClosed, quota.FailOpen, quota.FailLocal} {
					t.Run(how+"/"+failure.String(), func(t *testing.T) {
						store := &watched{Counter: st.open(t, srv, "rls:"+how+":"+failure.String()+":")}
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

						stop()
						t.Cleanup(start) // for the next case, should this one fail
						down := time.Now()
						tick := time.NewTicker(every)
						defer tick.Stop()
						var took []time.Duration
						for time.Since(down) < outage {
							took = append(took, call())
							<-tick.C
						}
						if store.answered.Load() != 1 {
							t.Fatal("the store answered while down")
						}
						// The first call fails; then one probe each interval.
						maxAsked := int64(1 + int64(outage)/storedown.Every + 1)
						if got := store.asked.Load() - 1; got > maxAsked {
							t.Errorf("the store was asked %d times in %v of outage, want at most %d", got, outage, maxAsked)
						}
						slices.Sort(took)
						p99 := took[len(took)*99/100]
						t.Logf("%d calls with the store down: p50 %v, p99 %v, max %v", len(took), took[len(took)/2], p99, took[len(took)-1])
						if p99 > fast {
							t.Errorf("p99 of %d calls with the store down = %v, want under %v", len(took), p99, fast)
						}

						start()
						back := time.Now()
						for store.answered.Load() == 1 && time.Since(back) < 5*time.Second {
							call()
							<-tick.C
						}
						took2 := time.Since(back)
						t.Logf("back on the store %v after it ran again", took2)
						if took2 > 2*time.Second {
							t.Errorf("calls went back to the store %v after it ran again, want within 2s", took2)
						}
					})
				}
			}
		})
	}
}
