package outagetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/internal/storedown"
	"github.com/admitgo/admit/quota"
)

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
	failedAt atomic.Int64 // when the first failed store call ended, Unix nanoseconds; 0 before
	lastFail atomic.Int64 // when the latest failed store call ended, Unix nanoseconds
	downAt   time.Time    // when the server went down; set before phase down
	backAt   time.Time    // when the server answered again; set before phase back
	mu       sync.Mutex   // guards the following fields
	phases   [numPhases]stats
	transit  stats
	recovery time.Duration   // from backAt to the end of the last failed or skipped call
	outage   []time.Duration // latencies of the requests of phase down that began after a store call failed
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
	var lastFailure time.Time // the end of the last failed or skipped call that began after the server was back
	var outage []time.Duration
	tick := time.NewTicker(pace)
	defer tick.Stop()
	for n := 0; n < maxRequests; n++ {
		select {
		case <-r.stop:
			n = maxRequests
			continue
		case <-tick.C:
		}
		p0 := int(r.phase.Load())
		start := time.Now()
		c, w := send(r.h, peer)
		lat := time.Since(start)
		p1 := int(r.phase.Load())
		// A call that timed out while the server was up sends the door off
		// the store until its next probe, as any failure does.
		excused := start.UnixNano() < r.lastFail.Load()+storedown.Every
		r.check(peer, p0, p1, c, w, lat, excused)
		if c.err != nil {
			r.failedAt.CompareAndSwap(0, start.Add(lat).UnixNano())
			r.lastFail.Store(start.Add(lat).UnixNano())
		}
		if p0 >= back && (c.err != nil || !c.decided) {
			lastFailure = start.Add(lat)
		}
		if p0 == down && p1 == down {
			if f := r.failedAt.Load(); f != 0 && start.UnixNano() > f {
				outage = append(outage, lat)
			}
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
	r.outage = append(r.outage, outage...)
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
// A request that was not asked while the server was up is excused when it
// began within storedown.Every of a failed call's end.
func (r *run) check(peer string, p0, p1 int, c *call, w *httptest.ResponseRecorder, lat time.Duration, excused bool) {
	var problems []string
	if lat > r.Timeout+Margin {
		problems = append(problems, fmt.Sprintf("took %v, want at most the store's timeout %v + %v", lat, r.Timeout, Margin))
	}
	why := "store error"
	if !c.decided {
		why = "not asked"
	}
	switch {
	case !c.decided && (p0 == up || p0 == settled) && !excused:
		problems = append(problems, "the store was not asked while it answered")
	case c.decided && c.err == nil:
		if w.Code != http.StatusOK || !c.served {
			problems = append(problems, fmt.Sprintf("got %d (handler ran: %v) without a store error, want 200", w.Code, c.served))
		}
	case r.Failure == quota.FailClosed:
		if w.Code != http.StatusServiceUnavailable || c.served || w.Header().Get("Retry-After") == "" {
			problems = append(problems, fmt.Sprintf("%s under fail closed: got %d (handler ran: %v, Retry-After %q), want 503 with Retry-After and the handler not run", why, w.Code, c.served, w.Header().Get("Retry-After")))
		}
	default:
		if w.Code != http.StatusOK || !c.served {
			problems = append(problems, fmt.Sprintf("%s under fail %v: got %d (handler ran: %v), want 200", why, r.Failure, w.Code, c.served))
		}
	}
	if p0 == p1 && p0 == up && c.err != nil && !timedOut(c.err) {
		problems = append(problems, fmt.Sprintf("store error before the outage: %v", c.err))
	}
	if p0 == p1 && p0 == settled && c.err != nil && !timedOut(c.err) {
		problems = append(problems, fmt.Sprintf("store error more than %v after the server answered again: %v", r.Recovery, c.err))
	}
	if p0 == p1 && p0 == down && c.decided && c.err == nil {
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
		r.t.Logf("%-8s %6d requests, %6d store errors, %6d not asked, %6d admitted, slowest %v (first error: %v)", phaseNames[p], s.requests, s.failed, s.skipped, s.served, s.maxLatency, s.firstErr)
	}
	r.t.Logf("%-8s %6d requests, %6d store errors, %6d not asked, %6d admitted, slowest %v", "transit", r.transit.requests, r.transit.failed, r.transit.skipped, r.transit.served, r.transit.maxLatency)
	r.checkOutage()
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
	var requests, failed, skipped int64
	for _, s := range append(r.phases[:], r.transit) {
		requests += int64(s.requests)
		failed += int64(s.failed)
		skipped += int64(s.skipped)
	}
	// The outcome names are the documented ones (docs/quota.md,
	// docs/operators.md).
	outcome, door := "failed_closed", "door store_error"
	switch r.Failure {
	case quota.FailOpen:
		outcome = "failed_open"
	case quota.FailLocal:
		door = "door fallback"
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, p := range sum.DataPoints {
				group, _ := p.Attributes.Value(attribute.Key("admit.door.group"))
				door, _ := p.Attributes.Value(attribute.Key("admit.door.outcome"))
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
		door:               failed + skipped,
		"door ok":          requests - failed - skipped,
		"store " + outcome: failed,
	}
	for k, n := range want {
		if got[k] != n {
			r.t.Errorf("metric %s: got %d, want %d", k, got[k], n)
		}
	}
}

// checkOutage wants the requests of the outage that began after a store
// call failed to have answered at p99 within Fast, and the store to have
// been asked during the outage no more than by the door's probes, one each
// storedown.Every, and the calls each client had in flight when it failed.
func (r *run) checkOutage() {
	r.t.Helper()
	lat := r.outage
	if len(lat) == 0 {
		r.t.Errorf("no request began during the outage after a store call failed")
		return
	}
	slices.Sort(lat)
	p99 := lat[len(lat)*99/100]
	r.t.Logf("outage   %6d requests after the first failure: p50 %v, p99 %v, max %v", len(lat), lat[len(lat)/2], p99, lat[len(lat)-1])
	if p99 > Fast {
		r.t.Errorf("p99 of %d requests during the outage = %v, want at most %v: requests wait for a store that is down", len(lat), p99, Fast)
	}
	s := r.phases[down]
	probes := clients + int(int64(r.backAt.Sub(r.downAt))/storedown.Every) + 1
	if asked := s.requests - s.skipped; asked > probes {
		r.t.Errorf("the store was asked %d times during the outage, want at most %d (a probe each %v and the calls in flight)", asked, probes, time.Duration(storedown.Every))
	}
}
