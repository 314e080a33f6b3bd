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

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

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
