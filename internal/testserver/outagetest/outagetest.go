// Package outagetest puts a door whose budget lives in a shared store through
// an outage of the store's server, so each store's tests can show the same
// claims: while the server is down every request follows the store's failure
// policy within the store's timeout, nothing hangs or leaks, and decisions
// resume once the server is back.
//
// [Test.Run] sends requests from a few clients through a door with two
// groups on the store: one with a budget no client can exhaust, so that only
// the outage decides, and one with a small burst that never refills during the
// test, to check exact enforcement before and after. It stops the server
// while the load runs and starts it again, then checks every request:
//
//   - each answered within the store's Timeout plus [Margin];
//   - a request whose store call failed was refused 503 with Retry-After and
//     never reached the handler under fail closed, and was admitted under
//     fail open; any other request was admitted;
//   - every store call failed while the server was stopped, and none before
//     (but for timeouts, which a loaded machine causes);
//   - from [Test].Recovery after the server answered again, every store call
//     succeeded (but for timeouts), and a fresh client's burst was enforced
//     exactly;
//   - the door's store_error outcomes and the store's failed_closed or
//     failed_open decisions equal the failed calls;
//   - after the store and its client are closed, no goroutine is left.
package outagetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
)

// Margin is how much longer than the store's Timeout a whole request may
// take: the door's own work, and scheduling on a loaded machine under -race.
const Margin = time.Second

// The load: a few clients, each sending one request at a time, for at most
// phaseTimeout per phase. A phase ends once phaseRequests requests have
// started and ended within it.
const (
	clients       = 8
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
	// Failure is the store's failure policy.
	Failure quota.Policy
	// Timeout is the store's bound on one decision.
	Timeout time.Duration
	// Recovery is how long store calls may keep failing after the server
	// answers again, while the client finds out; 0 means none may. Run
	// keeps the load up for this long before it wants every call to
	// succeed.
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
	requests, failed, served int
	maxLatency               time.Duration
	firstErr                 error
}

func (s *stats) add(c *call, lat time.Duration) {
	s.requests++
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
	store, closeStore := tt.Open(t, mp)
	t.Cleanup(closeStore) // when a check fails before the end; closing twice is harmless
	door := newDoor(t, observed{store}, mp)
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
	tt.Server.Stop()
	r.phase.Store(down)
	r.await(down)
	r.phase.Store(starting)
	tt.Server.Start()
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

func newDoor(t *testing.T, store quota.Charger, mp metric.MeterProvider) *admit.Door {
	t.Helper()
	generous := admit.Budget{
		Rate: 1e6, Burst: 1e6, SharedRate: 1e6, SharedBurst: 1e6,
		PerClient: 2, Inflight: 2 * clients, MaxClients: 1024, Store: store,
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

// run is the load of one Test.
type run struct {
	Test
	t        *testing.T
	h        http.Handler
	phase    atomic.Int32
	count    [numPhases]atomic.Int64
	reach    [numPhases]chan struct{} // closed when count reaches phaseRequests
	stop     chan struct{}
	wg       sync.WaitGroup
	errs     atomic.Int64
	backAt   time.Time  // when the server answered again; set before phase back
	mu       sync.Mutex // guards the following fields
	phases   [numPhases]stats
	transit  stats
	recovery time.Duration // from backAt to the end of the last failed call
}

func (r *run) start() {
	r.stop = make(chan struct{})
	for p := range r.reach {
		r.reach[p] = make(chan struct{})
	}
	for i := range clients {
		r.wg.Go(func() { r.client(i) })
	}
	r.t.Cleanup(r.finish) // when a check fails before finish
}

// await waits until phase p has seen its requests.
func (r *run) await(p int) {
	r.t.Helper()
	select {
	case <-r.reach[p]:
	case <-time.After(phaseTimeout):
		r.finish()
		r.t.Fatalf("phase %s: %d requests in %v, want %d", phaseNames[p], r.count[p].Load(), phaseTimeout, phaseRequests)
	}
}

// finish stops the load and waits for the clients; it may be called again.
func (r *run) finish() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.wg.Wait()
}

// client sends requests one at a time from its own address until the run
// stops, checking each as it is answered.
func (r *run) client(i int) {
	peer := fmt.Sprintf("192.0.2.%d:1", i+1)
	var phases [numPhases]stats
	var transit stats
	var lastFailure time.Time // the end of the last failed call that began after the server was back
	for n := 0; n < maxRequests; n++ {
		select {
		case <-r.stop:
			n = maxRequests
			continue
		default:
		}
		p0 := int(r.phase.Load())
		start := time.Now()
		c, w := send(r.h, peer)
		lat := time.Since(start)
		p1 := int(r.phase.Load())
		r.check(peer, p0, p1, c, w, lat)
		if p0 >= back && c.err != nil {
			lastFailure = start.Add(lat)
		}
		if p0 != p1 {
			transit.add(c, lat)
			continue
		}
		phases[p0].add(c, lat)
		if r.count[p0].Add(1) == phaseRequests {
			close(r.reach[p0])
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range phases {
		r.phases[p].merge(phases[p])
	}
	r.transit.merge(transit)
	if !lastFailure.IsZero() {
		r.recovery = max(r.recovery, lastFailure.Sub(r.backAt))
	}
}

// timedOut reports whether err is a call that ran out of time. A loaded
// machine (these tests run under -race beside others) can make a call
// outlast the store's timeout while the server is up; that still follows the
// policy, so it is not held against the store outside the outage.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// check holds one request to the failure policy and the timeout.
func (r *run) check(peer string, p0, p1 int, c *call, w *httptest.ResponseRecorder, lat time.Duration) {
	var problems []string
	if lat > r.Timeout+Margin {
		problems = append(problems, fmt.Sprintf("took %v, want at most the store's timeout %v + %v", lat, r.Timeout, Margin))
	}
	switch {
	case !c.decided:
		problems = append(problems, "the store was not asked")
	case c.err == nil:
		if w.Code != http.StatusOK || !c.served {
			problems = append(problems, fmt.Sprintf("got %d (handler ran: %v) without a store error, want 200", w.Code, c.served))
		}
	case r.Failure == quota.FailClosed:
		if w.Code != http.StatusServiceUnavailable || c.served || w.Header().Get("Retry-After") == "" {
			problems = append(problems, fmt.Sprintf("store error under fail closed: got %d (handler ran: %v, Retry-After %q), want 503 with Retry-After and the handler not run", w.Code, c.served, w.Header().Get("Retry-After")))
		}
	default:
		if w.Code != http.StatusOK || !c.served {
			problems = append(problems, fmt.Sprintf("store error under fail open: got %d (handler ran: %v), want 200", w.Code, c.served))
		}
	}
	if p0 == p1 && p0 == up && c.err != nil && !timedOut(c.err) {
		problems = append(problems, fmt.Sprintf("store error before the outage: %v", c.err))
	}
	if p0 == p1 && p0 == settled && c.err != nil && !timedOut(c.err) {
		problems = append(problems, fmt.Sprintf("store error more than %v after the server answered again: %v", r.Recovery, c.err))
	}
	if p0 == p1 && p0 == down && c.err == nil {
		problems = append(problems, "decided without error while the server was stopped")
	}
	if len(problems) > 0 && r.errs.Add(1) <= maxErrors {
		r.t.Errorf("client %s, phase %s->%s: %s", peer, phaseNames[p0], phaseNames[p1], strings.Join(problems, "; "))
	}
}

// report logs what each phase saw and reports the requests whose checks
// failed beyond the first few.
func (r *run) report() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, s := range r.phases {
		r.t.Logf("%-8s %6d requests, %6d store errors, %6d admitted, slowest %v (first error: %v)", phaseNames[p], s.requests, s.failed, s.served, s.maxLatency, s.firstErr)
	}
	r.t.Logf("%-8s %6d requests, %6d store errors, %6d admitted, slowest %v", "transit", r.transit.requests, r.transit.failed, r.transit.served, r.transit.maxLatency)
	if n := r.errs.Load(); n > maxErrors {
		r.t.Errorf("%d more requests failed their checks", n-maxErrors)
	}
	if r.recovery > 0 {
		r.t.Logf("the last failed store call ended %v after the server answered again", r.recovery)
	} else {
		r.t.Logf("no store call failed after the server answered again")
	}
}

// checkMetrics wants the door's store_error outcomes and the store's failed
// decisions to equal the failed calls.
func (r *run) checkMetrics(reader *sdkmetric.ManualReader) {
	r.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		r.t.Fatal(err)
	}
	var requests, failed int64
	for _, s := range append(r.phases[:], r.transit) {
		requests += int64(s.requests)
		failed += int64(s.failed)
	}
	// The outcome names are the documented ones (docs/quota.md).
	outcome := "failed_closed"
	if r.Failure == quota.FailOpen {
		outcome = "failed_open"
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, p := range sum.DataPoints {
				group, _ := p.Attributes.Value(admit.AttrGroup)
				door, _ := p.Attributes.Value(admit.AttrOutcome)
				store, _ := p.Attributes.Value("admit.quota.outcome")
				switch {
				case m.Name == "admit.door.requests" && group.AsString() == string(loadGroup):
					got["door "+door.AsString()] += p.Value
				case m.Name == "admit.quota.decisions":
					got["store "+store.AsString()] += p.Value
				}
			}
		}
	}
	want := map[string]int64{
		"door store_error": failed,
		"door ok":          requests - failed,
		"store " + outcome: failed,
	}
	for k, n := range want {
		if got[k] != n {
			r.t.Errorf("metric %s: got %d, want %d", k, got[k], n)
		}
	}
}
