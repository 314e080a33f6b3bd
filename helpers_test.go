package admit

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/admitgo/admit/internal/testclock"
)

// newClock returns a settable clock for the door's Now.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// newDoor builds a door on clk with budgets overriding the defaults.
func newDoor(t *testing.T, clk *testclock.Clock, cfg Config) *Door {
	t.Helper()
	cfg.Now = clk.Now
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

// status returns a handler that answers code.
func status(code int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) })
}

// do sends one request from peer (ip:port) through h.
func do(h http.Handler, method, peer string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/x", nil)
	r.RemoteAddr = peer
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// allowed asserts that a request from peer reaches the handler and gets want.
func allowed(t *testing.T, h http.Handler, peer string, want int) {
	t.Helper()
	if w := do(h, "GET", peer); w.Code != want {
		t.Fatalf("request from %s: got %d, want %d (admitted)", peer, w.Code, want)
	}
}

// rejected asserts that a request from peer is answered code with a
// Retry-After of retry seconds (any when retry is 0), and returns the answer.
func rejected(t *testing.T, h http.Handler, peer string, code int, retry string) *httptest.ResponseRecorder {
	t.Helper()
	w := do(h, "GET", peer)
	if w.Code != code {
		t.Fatalf("request from %s: got %d, want %d", peer, w.Code, code)
	}
	got := w.Header().Get("Retry-After")
	if got == "" || (retry != "" && got != retry) {
		t.Fatalf("request from %s: Retry-After %q, want %q", peer, got, retry)
	}
	return w
}

// blocker is a handler that holds requests until released: entered receives
// one value per request that reached it.
type blocker struct {
	entered chan struct{}
	release chan struct{}
	code    int
}

func newBlocker(code int) *blocker {
	return &blocker{entered: make(chan struct{}, 64), release: make(chan struct{}), code: code}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.entered <- struct{}{}
	<-b.release
	w.WriteHeader(b.code)
}

// hold starts n requests from peer that block in b, waits until all are
// inside, and returns a wait function that releases them and waits for their
// answers.
func hold(t *testing.T, h http.Handler, b *blocker, peer string, n int) (release func()) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { do(h, "GET", peer) })
		<-b.entered
	}
	return func() {
		close(b.release)
		wg.Wait()
	}
}

// atomicCounter hands out distinct starting points to parallel benchmark
// goroutines.
type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add(d int64) int64 { return c.n.Add(d) }

// sdkReader returns a meter provider recording into a manual reader.
func sdkReader() (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	reader := sdkmetric.NewManualReader()
	return reader, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
}

// sdkProvider returns a real SDK meter provider, so measurements cost what
// they cost in production.
func sdkProvider() *sdkmetric.MeterProvider {
	_, mp := sdkReader()
	return mp
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }

// assertIdle fails unless nothing of g is in flight.
func assertIdle(t *testing.T, g *group) {
	t.Helper()
	if n := g.inflight.Load(); n != 0 {
		t.Fatalf("group %s: %d in flight, want 0", g.name, n)
	}
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		n := len(s.perClient)
		for _, e := range s.table.All() {
			if e.inflight != 0 || e.held != 0 {
				n++
			}
		}
		s.mu.Unlock()
		if n != 0 {
			t.Fatalf("group %s shard %d: %d clients in flight, want none", g.name, i, n)
		}
	}
}

// outcomeCount returns how many requests of g ended with o.
func outcomeCount(g *group, o outcome) int64 {
	_, _, outcomes, _ := g.stats()
	return outcomes[o]
}
