// Package outagetest puts a door whose budget lives in a shared store through
// an outage of the store's server, refused (the server stopped) or
// black-holed (the server paused), so each store's tests can show the same
// claims: while the server is down every request follows the group's
// failure policy (closed, open or local) within the store's timeout, the
// door stops asking the store after its first failures, nothing hangs or
// leaks, and decisions resume once the server is back.
//
// [Test.Run] sends requests from a few clients through a door with two
// groups on the store: one with a budget no client can exhaust, so that only
// the outage decides, and one with a small burst that never refills during the
// test, to check exact enforcement before and after. It stops (or pauses)
// the server while the load runs for at least [MinOutage] and starts (or
// resumes) it again, then checks every request:
//
//   - each answered within the store's Timeout plus [Margin];
//   - a request whose store call failed, or that the door did not ask the
//     store while it was down, was refused 503 with Retry-After and never
//     reached the handler under fail closed, and was admitted under fail
//     open and local; any other request was admitted;
//   - every store call failed while the server was down, and none before
//     (but for timeouts, which a loaded machine causes);
//   - once a store call had failed, the requests that began while the
//     server was down answered at p99 within [Fast]: no request but the
//     door's probe, one a second, waited for the store's timeout;
//   - from [Test].Recovery (at most 2 s) after the server answered again,
//     every request asked the store and every store call succeeded (but
//     for timeouts), and a fresh client's burst was enforced exactly;
//   - the door's store_error (or, under local, fallback) outcomes equal the
//     requests the store did not decide, and the store's failed_closed or
//     failed_open decisions equal its failed calls;
//   - after the store and its client are closed, no goroutine is left.
package outagetest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
)

// Margin is how much longer than the store's Timeout a whole request may
// take: the door's own work, and scheduling on a loaded machine under -race.
const Margin = time.Second

// MinOutage is the least time the server stays down, so that the door
// probes it during the outage.
const MinOutage = 1500 * time.Millisecond

// MaxRecovery bounds Test.Recovery: decisions return to the store within
// it of the server's recovery.
const MaxRecovery = 2 * time.Second

// The load: a few clients, each sending one request at a time, at most one
// each pace, for at most phaseTimeout per phase. A phase ends once
// phaseRequests requests have started and ended within it. The pace keeps
// the load from taking every core, which would time the scheduler rather
// than the door.
const (
	clients       = 8
	pace          = time.Millisecond
	phaseRequests = 400
	phaseTimeout  = 5 * time.Second
	maxRequests   = 200_000 // per client, a backstop for the time bound
	maxErrors     = 10      // reported per test; the rest are counted
)

// The groups: load can never run out of tokens, probe never refills during a
// test.
const (
	loadGroup  admit.Group = "outage-load"
	probeGroup admit.Group = "outage-probe"
	probeBurst             = 5
)

// Test is one outage of one store.
type Test struct {
	// Server is the store's private server; Run stops and starts it.
	Server *testserver.Server
	// Failure is the group's failure policy: quota.FailClosed, FailOpen or
	// FailLocal (with Replicas 2). Open gets it for the store too.
	Failure quota.Failure
	// BlackHole pauses the server (SIGSTOP) for the outage, so that calls
	// hang until the store's timeout; false stops it, so that they are
	// refused.
	BlackHole bool
	// Timeout is the store's bound on one decision.
	Timeout time.Duration
	// Recovery is how long store calls may keep failing, or the door keep
	// off the store, after the server answers again, while the client and
	// the door's probe find out: at most MaxRecovery. Run keeps the load up
	// for this long before it wants every request decided by the store.
	Recovery time.Duration
	// Open returns a store on Server with Failure and Timeout that reports
	// its metrics to mp, and a function that closes the store and its client
	// or pool. Run calls it once, after taking the goroutine snapshot, and
	// calls close before checking for leaks.
	Open func(t *testing.T, mp metric.MeterProvider) (store quota.Charger, close func())
}

// The phases of a run, as the load sees them.
const (
	up       = iota // before the outage
	stopping        // Server.Stop running
	down            // stopped
	starting        // Server.Start running
	back            // answering again, for Test.Recovery
	settled         // answering again, after Test.Recovery
	numPhases
)

var phaseNames = [numPhases]string{"up", "stopping", "down", "starting", "back", "settled"}

// A call is what the store did for one request, filled in by the observing
// store through the request's context.
type call struct {
	decided bool
	err     error
	served  bool // the handler ran
}

type callKey struct{}

// observed passes calls to the store and notes their errors in the
// request's call.
type observed struct{ quota.Charger }

func (o observed) Allow(ctx context.Context, rule quota.Rule, subject string) (quota.Decision, error) {
	return o.AllowN(ctx, rule, subject, 1)
}

func (o observed) AllowN(ctx context.Context, rule quota.Rule, subject string, n int) (quota.Decision, error) {
	d, err := o.Charger.AllowN(ctx, rule, subject, n)
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.decided, c.err = true, err
	}
	return d, err
}

// stats sums the requests that began and ended in one phase; transit holds
// those that spanned a change.
type stats struct {
	requests, failed, skipped, served int
	maxLatency                        time.Duration
	firstErr                          error
}

func (s *stats) add(c *call, lat time.Duration) {
	s.requests++
	if !c.decided {
		s.skipped++
	}
	if c.err != nil {
		s.failed++
		if s.firstErr == nil {
			s.firstErr = c.err
		}
	}
	if c.served {
		s.served++
	}
	s.maxLatency = max(s.maxLatency, lat)
}

func (s *stats) merge(o stats) {
	s.requests += o.requests
	s.failed += o.failed
	s.skipped += o.skipped
	s.served += o.served
	s.maxLatency = max(s.maxLatency, o.maxLatency)
	if s.firstErr == nil {
		s.firstErr = o.firstErr
	}
}

// Run runs the outage; see the package documentation for what it checks.
func (tt Test) Run(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	if tt.Recovery > MaxRecovery {
		t.Fatalf("outagetest: Recovery %v, want at most %v", tt.Recovery, MaxRecovery)
	}
	store, closeStore := tt.Open(t, mp)
	t.Cleanup(closeStore) // when a check fails before the end; closing twice is harmless
	door := newDoor(t, observed{store}, mp, tt.Failure)
	t.Cleanup(func() { door.Close() })
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Context().Value(callKey{}).(*call).served = true
	})
	load := door.Wrap(loadGroup, served, nil)
	probe := door.Wrap(probeGroup, served, nil)

	burst(t, probe, "198.51.100.1:1", "before the outage")

	r := &run{Test: tt, t: t, h: load}
	r.start()
	r.await(up)
	r.phase.Store(stopping)
	stop, start := tt.Server.Stop, tt.Server.Start
	if tt.BlackHole {
		stop, start = tt.Server.Pause, tt.Server.Resume
	}
	stop()
	r.downAt = time.Now()
	r.phase.Store(down)
	r.await(down)
	<-time.After(time.Until(r.downAt.Add(MinOutage))) // the load runs meanwhile
	r.phase.Store(starting)
	start()
	r.backAt = time.Now()
	r.phase.Store(back)
	<-time.After(tt.Recovery) // the load runs meanwhile
	r.phase.Store(settled)
	r.await(settled)
	r.finish()

	burst(t, probe, "198.51.100.2:1", "after the outage")
	r.report()
	r.checkMetrics(reader)

	door.Close()
	mp.Shutdown(context.Background())
	closeStore()
	tt.Server.Stop()
	noLeaks(t, leaks)
}

// settleRounds bounds how often noLeaks looks for leaked goroutines; each
// look retries for about half a second.
const settleRounds = 6

// noLeaks fails t if goroutines other than those leaks ignores are still
// running a few seconds after the store and its client were closed. Clients
// may take that long to notice: go-redis's dial prober, started when dials
// keep failing, sleeps a second between probes before it sees that its pool
// was closed.
func noLeaks(t *testing.T, leaks goleak.Option) {
	t.Helper()
	for range settleRounds - 1 {
		if goleak.Find(leaks) == nil {
			return
		}
	}
	goleak.VerifyNone(t, leaks)
}

func newDoor(t *testing.T, store quota.Charger, mp metric.MeterProvider, failure quota.Failure) *admit.Door {
	t.Helper()
	generous := admit.Budget{
		Rate: 1e6, Burst: 1e6, SharedRate: 1e6, SharedBurst: 1e6,
		PerClient: 2, Inflight: 2 * clients, MaxClients: 1024, Store: store, Failure: failure,
	}
	if failure == quota.FailLocal {
		generous.Replicas = 2
	}
	tight := generous
	tight.Rate, tight.Burst = rate.Limit(1e-3), probeBurst // one token in 1,000 s
	door, err := admit.New(admit.Config{
		Budgets:       map[admit.Group]admit.Budget{loadGroup: generous, probeGroup: tight},
		MeterProvider: mp,
	})
	if err != nil {
		t.Fatal(err)
	}
	return door
}

// burst sends one more request than the probe group's burst from a new
// client and wants all but the last admitted, and no store error.
func burst(t *testing.T, h http.Handler, peer, when string) {
	t.Helper()
	for i := range probeBurst + 1 {
		c, w := send(h, peer)
		want := http.StatusOK
		if i == probeBurst {
			want = http.StatusTooManyRequests
		}
		if c.err != nil || w.Code != want {
			t.Fatalf("%s: request %d of a new client with burst %d: got %d (store error %v), want %d", when, i+1, probeBurst, w.Code, c.err, want)
		}
	}
}

func send(h http.Handler, peer string) (*call, *httptest.ResponseRecorder) {
	c := &call{}
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = peer
	req = req.WithContext(context.WithValue(req.Context(), callKey{}, c))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return c, w
}
