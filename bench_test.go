package admit

import (
	"fmt"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// discard is a ResponseWriter that keeps nothing, so benchmarks and
// allocation counts measure the door alone. Like many test writers, it does
// not support read deadlines.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// benchDoor returns the webhook group of a door with metrics recorded by a
// real SDK, answering 200 (so charge-on-failure never runs dry).
func benchDoor(tb testing.TB) http.Handler {
	tb.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	d, err := New(Config{MeterProvider: mp})
	if err != nil {
		tb.Fatal(err)
	}
	return d.Wrap(GroupWebhook, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}), nil)
}

// requests returns n requests from distinct IPv4 peers.
func requests(n int, method string) []*http.Request {
	rs := make([]*http.Request, n)
	for i := range rs {
		r, _ := http.NewRequest(method, "http://example.com/hooks/x", nil)
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		r.RemoteAddr = netip.AddrPortFrom(a, 40000).String()
		rs[i] = r
	}
	return rs
}

func TestAllowedPathAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -race and -cover; the benchmark run checks them")
	}
	h := benchDoor(t)
	w := &discard{h: http.Header{}}
	get := requests(1, "GET")[0]
	if got := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, get) }); got != 0 {
		t.Errorf("GET: got %v allocations, want 0 (the status-recording writer is pooled)", got)
	}
	post := requests(1, "POST")[0]
	body := strings.NewReader("{}")
	if got := testing.AllocsPerRun(1000, func() {
		body.Reset("{}")
		post.Body, post.ContentLength = noopCloser{body}, 2
		h.ServeHTTP(w, post)
	}); got != 1 {
		t.Errorf("POST with a body: got %v allocations, want 1 (http.MaxBytesReader, which closes the connection after an oversized body)", got)
	}
}

func TestRejectedPathAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -race and -cover; the benchmark run checks them")
	}
	d, err := New(Config{MeterProvider: sdkProvider()})
	if err != nil {
		t.Fatal(err)
	}
	h := d.Wrap(GroupLink, http.NotFoundHandler(), nil)
	w := &discard{h: http.Header{}}
	get := requests(1, "GET")[0]
	for range defaults[GroupLink].Burst {
		h.ServeHTTP(w, get)
	}
	if got := testing.AllocsPerRun(1000, func() {
		clear(w.h)
		h.ServeHTTP(w, get)
	}); got != 0 {
		t.Errorf("429: got %v allocations, want 0", got)
	}
	if got := w.h.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After: got %q, want \"1\"", got)
	}
}

type noopCloser struct{ *strings.Reader }

func (noopCloser) Close() error { return nil }

// BenchmarkDoor measures the allowed path of the webhook group, writer and
// metrics included, for 1, 1,024 and 65,536 rotating clients; the last
// exceeds the 16,384-entry table, so it exercises eviction and the shared
// bucket.
func BenchmarkDoor(b *testing.B) {
	for _, clients := range []int{1, 1024, 65536} {
		rs := requests(clients, "GET")
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			h := benchDoor(b)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.ServeHTTP(w, rs[i%clients])
				i++
			}
		})
		b.Run(fmt.Sprintf("clients=%d/parallel", clients), func(b *testing.B) {
			h := benchDoor(b)
			b.ReportAllocs()
			var next atomicCounter
			b.RunParallel(func(pb *testing.PB) {
				w := &discard{h: http.Header{}}
				i := int(next.add(7919)) // spread goroutines over the key set
				for pb.Next() {
					h.ServeHTTP(w, rs[i%clients])
					i++
				}
			})
		})
	}
}

// BenchmarkDoorRejected measures a flood from one client far over the link
// group's budget: every request is answered 429 at the door.
func BenchmarkDoorRejected(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	d, err := New(Config{MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	h := d.Wrap(GroupLink, http.NotFoundHandler(), nil)
	w := &discard{h: http.Header{}}
	r := requests(1, "GET")[0]
	for range defaults[GroupLink].Burst {
		h.ServeHTTP(w, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// BenchmarkStacked measures a route of 1 to 3 stacked peer-keyed limits on
// the door's own buckets, 1,024 rotating clients: the cost of each further
// limit is the step between cases.
func BenchmarkStacked(b *testing.B) {
	rs := requests(1024, "GET")
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("limits=%d", n), func(b *testing.B) {
			budgets := map[Group]Budget{}
			var groups []Group
			for i := range n {
				g := Group(fmt.Sprintf("g%d", i))
				budgets[g] = Budget{Rate: 1e9, Burst: 1 << 30, PerClient: 1 << 20, Inflight: 1 << 20}
				groups = append(groups, g)
			}
			d, err := New(Config{Budgets: budgets, MeterProvider: sdkProvider()})
			if err != nil {
				b.Fatal(err)
			}
			h, err := d.Handler(Route{Groups: groups}, status(http.StatusOK))
			if err != nil {
				b.Fatal(err)
			}
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.ServeHTTP(w, rs[i%len(rs)])
				i++
			}
		})
	}
}

// BenchmarkHeaderKey measures a limit keyed by an Authorization header, whose
// value is hashed with SHA-256 for every request, beside the same limit keyed
// by the peer: the step is the hash.
func BenchmarkHeaderKey(b *testing.B) {
	for _, key := range []Key{{}, {Header: "Authorization", Authenticated: true}} {
		name := "peer"
		if key.Header != "" {
			name = "header"
		}
		b.Run("key="+name, func(b *testing.B) {
			d, err := New(Config{MeterProvider: sdkProvider(), Budgets: map[Group]Budget{
				"api": {Rate: 1e9, Burst: 1 << 30, PerClient: 1 << 20, Inflight: 1 << 20, Key: key},
			}})
			if err != nil {
				b.Fatal(err)
			}
			h := d.Wrap("api", status(http.StatusOK), nil)
			rs := requests(1024, "GET")
			for i, r := range rs {
				r.Header.Set("Authorization", fmt.Sprintf("Bearer eyJhbGciOiJIUzI1NiJ9.token-%06d.signature-of-the-token", i))
			}
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.ServeHTTP(w, rs[i%len(rs)])
				i++
			}
		})
	}
}

// TestMemoryStaysBounded sends one request from each of 1,048,576 distinct
// addresses through one group and reports the heap growth; it must stay
// under 8 MiB.
func TestMemoryStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a million requests")
	}
	const n = 1 << 20
	h := benchDoor(t)
	w := &discard{h: http.Header{}}
	r, _ := http.NewRequest("GET", "http://example.com/hooks/x", nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		r.RemoteAddr = netip.AddrPortFrom(a, 40000).String()
		h.ServeHTTP(w, r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(h)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap growth after %d distinct clients: %.2f MiB (%d bytes per tracked client, %d tracked)",
		n, float64(growth)/(1<<20), growth/int64(defaults[GroupLink].MaxClients), defaults[GroupLink].MaxClients)
	if growth > 8<<20 {
		t.Fatalf("heap grew %d bytes, want under 8 MiB", growth)
	}
}

// BenchmarkHashKey measures the key of a header value alone: a bearer
// token of 64 bytes, as headerKey finds it.
func BenchmarkHashKey(b *testing.B) {
	v := "Bearer eyJhbGciOiJIUzI1NiJ9.token-000042.signature-of-the-token"
	b.ReportAllocs()
	for b.Loop() {
		headerKey(true, v)
	}
}
