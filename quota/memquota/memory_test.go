package quota

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/admitgo/admit/internal/testclock"
)

// newClock returns a settable clock for stores under test.
func newClock(t time.Time) *testclock.Clock { return testclock.New(t) }

func newMemory(t *testing.T, cfg MemoryConfig) *Memory {
	t.Helper()
	m, err := NewMemory(cfg)
	if err != nil {
		t.Fatalf("NewMemory: %v", err)
	}
	return m
}

func allowN(t *testing.T, l Charger, rule Rule, subject string, n int) Decision {
	t.Helper()
	d, err := l.AllowN(context.Background(), rule, subject, n)
	if err != nil {
		t.Fatalf("AllowN(%q, %d): %v", rule.Name, n, err)
	}
	return d
}

func TestNewMemory(t *testing.T) {
	tests := []struct {
		name    string
		cfg     MemoryConfig
		wantErr bool
	}{
		{"zero", MemoryConfig{}, false},
		{"bounded", MemoryConfig{MaxBuckets: 1}, false},
		{"negative bound", MemoryConfig{MaxBuckets: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewMemory(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Errorf("NewMemory(%+v): got %v, want error %v", tt.cfg, err, tt.wantErr)
			}
		})
	}
}

func TestMemoryFixedWindowRollover(t *testing.T) {
	clk := newClock(t0.Add(10 * time.Second))
	m := newMemory(t, MemoryConfig{Now: clk.Now})
	rule := Rule{Name: "signup", Limit: 2, Window: time.Minute}
	s := Subject("203.0.113.7")
	steps := []struct {
		advance time.Duration
		want    Decision
	}{
		{0, Decision{Allowed: true, Remaining: 1, RetryAfter: 50 * time.Second, Limit: 2, Window: time.Minute}},
		{5 * time.Second, Decision{Allowed: true, Remaining: 0, RetryAfter: 45 * time.Second, Limit: 2, Window: time.Minute}},
		{5 * time.Second, Decision{RetryAfter: 40 * time.Second, Limit: 2, Window: time.Minute}},
		{40*time.Second - 1, Decision{RetryAfter: 1, Limit: 2, Window: time.Minute}},
		{1, Decision{Allowed: true, Remaining: 1, RetryAfter: time.Minute, Limit: 2, Window: time.Minute}},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if got := allowN(t, m, rule, s, 1); got != st.want {
			t.Errorf("step %d (t0+%v): got %+v, want %+v", i, clk.Now().Sub(t0), got, st.want)
		}
	}
}

// TestMemoryMatchesModel drives the store and the package's arithmetic with
// the same random calls; every decision must be identical.
func TestMemoryMatchesModel(t *testing.T) {
	rules := []Rule{
		{Name: "fw", Limit: 5, Window: 2 * time.Second},
		{Name: "fw1", Limit: 1, Window: time.Second},
		{Name: "gcra", Limit: 5, Window: 2 * time.Second, Algorithm: GCRA},
		{Name: "gcra-burst", Limit: 10, Window: time.Second, Algorithm: GCRA, Burst: 3},
	}
	for _, rule := range rules {
		t.Run(rule.Name, func(t *testing.T) {
			clk := newClock(t0)
			m := newMemory(t, MemoryConfig{Now: clk.Now})
			fixed := fixedModel{}
			var gcra gcraModel
			s := Subject(rule.Name)
			r := rand.New(rand.NewPCG(3, 4))
			for i := range 3000 {
				clk.Advance(time.Duration(r.Int64N(int64(rule.Window / 5))))
				n := r.IntN(3)
				var want Decision
				if rule.Algorithm == GCRA {
					want = gcra.allowN(rule, clk.Now(), n)
				} else {
					want = fixed.allowN(rule, clk.Now(), n)
				}
				if got := allowN(t, m, rule, s, n); got != want {
					t.Fatalf("call %d (t0+%v, n=%d): got %+v, want %+v", i, clk.Now().Sub(t0), n, got, want)
				}
			}
		})
	}
}

func TestMemoryGCRABurstThenSteady(t *testing.T) {
	clk := newClock(t0)
	m := newMemory(t, MemoryConfig{Now: clk.Now})
	rule := Rule{Name: "login", Limit: 60, Window: time.Minute, Algorithm: GCRA, Burst: 5}
	s := Subject("user@example.com")
	allowed := 0
	for range 20 {
		if allowN(t, m, rule, s, 1).Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("burst: got %d allowed, want 5", allowed)
	}
	// One token a second from now on.
	for i := range 10 {
		clk.Advance(time.Second)
		if d := allowN(t, m, rule, s, 1); !d.Allowed {
			t.Errorf("second %d: got refused %+v, want allowed", i+1, d)
		}
		if d := allowN(t, m, rule, s, 1); d.Allowed || d.RetryAfter != time.Second {
			t.Errorf("second %d, again: got %+v, want refused with RetryAfter 1s", i+1, d)
		}
	}
}

func TestMemoryRefusesCallerErrors(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m := newMemory(t, MemoryConfig{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	ok := Rule{Name: "r", Limit: 1, Window: time.Second}
	tests := []struct {
		name    string
		rule    Rule
		subject string
		n       int
		want    error
	}{
		{"raw ip", ok, "203.0.113.7", 1, ErrSubject},
		{"raw email", ok, "someone@example.com", 1, ErrSubject},
		{"uppercase", ok, "E3B0C44298FC1C149AFBF4C8996FB924", 1, ErrSubject},
		{"zero limit", Rule{Name: "r", Window: time.Second}, Subject("x"), 1, ErrRule},
		{"zero window", Rule{Name: "r", Limit: 1}, Subject("x"), 1, ErrRule},
		{"negative cost", ok, Subject("x"), -1, ErrRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := m.AllowN(context.Background(), tt.rule, tt.subject, tt.n)
			if !errors.Is(err, tt.want) {
				t.Errorf("error: got %v, want %v", err, tt.want)
			}
			if d.Allowed {
				t.Errorf("decision: got %+v, want refused", d)
			}
		})
	}
	if got := m.Len(); got != 0 {
		t.Errorf("buckets after caller errors: got %d, want 0", got)
	}
	if decisions, _ := collect(t, reader); len(decisions) != 0 {
		t.Errorf("decisions counted: got %v, want none", decisions)
	}
}

func TestMemoryLooksStoreNothing(t *testing.T) {
	m := newMemory(t, MemoryConfig{Now: newClock(t0).Now})
	for _, alg := range []Algorithm{FixedWindow, GCRA} {
		rule := Rule{Name: "r", Limit: 1, Window: time.Second, Algorithm: alg}
		for i := range 5 {
			if d := allowN(t, m, rule, Subject(fmt.Sprint(i)), 0); !d.Allowed || d.Remaining != 1 {
				t.Errorf("%v look %d: got %+v, want allowed with 1 remaining", alg, i, d)
			}
		}
	}
	if got := m.Len(); got != 0 {
		t.Errorf("buckets after looks: got %d, want 0", got)
	}
}

func TestMemoryAlgorithmsDoNotShareBuckets(t *testing.T) {
	m := newMemory(t, MemoryConfig{Now: newClock(t0).Now})
	s := Subject("x")
	fixed := Rule{Name: "same", Limit: 1, Window: time.Minute}
	gcra := Rule{Name: "same", Limit: 1, Window: time.Minute, Algorithm: GCRA}
	other := Rule{Name: "other", Limit: 1, Window: time.Minute}
	for _, rule := range []Rule{fixed, gcra, other} {
		if d := allowN(t, m, rule, s, 1); !d.Allowed {
			t.Errorf("%s/%v: got %+v, want allowed", rule.Name, rule.Algorithm, d)
		}
	}
}

func TestMemoryBounded(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	clk := newClock(t0)
	m := newMemory(t, MemoryConfig{
		MaxBuckets:    10,
		Now:           clk.Now,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	rule := Rule{Name: "r", Limit: 1, Window: time.Minute}
	gcra := Rule{Name: "g", Limit: 1, Window: time.Minute, Algorithm: GCRA}

	// Expired buckets make room without evicting anything live.
	for i := range 5 {
		allowN(t, m, rule, Subject(fmt.Sprint("fw", i)), 1)
		allowN(t, m, gcra, Subject(fmt.Sprint("g", i)), 1)
	}
	clk.Advance(time.Minute)
	for i := range 10 {
		allowN(t, m, rule, Subject(fmt.Sprint("new", i)), 1)
	}
	if got := evictions(t, reader); got != 0 {
		t.Errorf("live buckets evicted while expired ones remained: got %d, want 0", got)
	}

	// Past the bound, the least recently used live bucket goes.
	for i := range 100 {
		allowN(t, m, rule, Subject(fmt.Sprint("rotating", i)), 1)
	}
	if got := m.Len(); got != 10 {
		t.Errorf("buckets: got %d, want 10", got)
	}
	if got := evictions(t, reader); got != 100 {
		t.Errorf("evictions: got %d, want 100", got)
	}
	// The most recent ten are tracked precisely.
	for i := 90; i < 100; i++ {
		if d := allowN(t, m, rule, Subject(fmt.Sprint("rotating", i)), 1); d.Allowed {
			t.Errorf("recent subject %d: got %+v, want refused", i, d)
		}
	}
}

func evictions(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	var n int64
	for _, v := range collectSums(t, reader, "admit.quota.evictions") {
		n += v
	}
	return n
}

func TestMemoryConcurrent(t *testing.T) {
	m := newMemory(t, MemoryConfig{Now: newClock(t0).Now})
	for _, rule := range []Rule{
		{Name: "fw", Limit: 100, Window: time.Hour},
		{Name: "gcra", Limit: 100, Window: time.Hour, Algorithm: GCRA},
	} {
		t.Run(rule.Name, func(t *testing.T) {
			s := Subject("hot")
			var wg sync.WaitGroup
			results := make(chan Decision, 1000)
			for range 50 {
				wg.Go(func() {
					for range 20 {
						d, err := m.Allow(context.Background(), rule, s)
						if err != nil {
							t.Error(err)
						}
						results <- d
					}
				})
			}
			wg.Wait()
			close(results)
			seen := map[int]bool{}
			for d := range results {
				if !d.Allowed {
					continue
				}
				if seen[d.Remaining] {
					t.Errorf("Remaining %d seen twice", d.Remaining)
				}
				seen[d.Remaining] = true
			}
			if len(seen) != rule.Limit {
				t.Errorf("allowed: got %d, want %d", len(seen), rule.Limit)
			}
		})
	}
}

func TestMemoryMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m := newMemory(t, MemoryConfig{Now: newClock(t0).Now, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	rule := Rule{Name: "r", Limit: 2, Window: time.Minute}
	for range 5 {
		m.Allow(context.Background(), rule, Subject("x"))
	}
	decisions, latencies := collect(t, reader)
	want := map[string]int64{"memory/allowed": 2, "memory/refused": 3}
	if fmt.Sprint(decisions) != fmt.Sprint(want) {
		t.Errorf("decisions: got %v, want %v", decisions, want)
	}
	if latencies["memory"] != 5 {
		t.Errorf("latency samples: got %d, want 5", latencies["memory"])
	}
}

func TestMemoryAllowNAllocs(t *testing.T) {
	m := newMemory(t, MemoryConfig{Now: newClock(t0).Now, MeterProvider: noop.NewMeterProvider()})
	ctx := context.Background()
	s := Subject("x")
	for _, rule := range []Rule{
		{Name: "fw", Limit: 1 << 30, Window: time.Hour},
		{Name: "gcra", Limit: 1 << 30, Window: time.Hour, Algorithm: GCRA},
	} {
		m.AllowN(ctx, rule, s, 1)
		if got := testing.AllocsPerRun(100, func() { m.AllowN(ctx, rule, s, 1) }); got != 0 {
			t.Errorf("%s: allocations per AllowN on a known bucket: got %v, want 0", rule.Name, got)
		}
	}
}

func BenchmarkMemoryAllow(b *testing.B) {
	m, err := NewMemory(MemoryConfig{MaxBuckets: 10_000, MeterProvider: noop.NewMeterProvider()})
	if err != nil {
		b.Fatal(err)
	}
	// Twice as many subjects as buckets, so the LRU evicts.
	subjects := make([]string, 20_000)
	for i := range subjects {
		subjects[i] = Subject(fmt.Sprint(i))
	}
	for _, rule := range []Rule{
		{Name: "fw", Limit: 100, Window: time.Minute},
		{Name: "gcra", Limit: 100, Window: time.Minute, Algorithm: GCRA},
	} {
		b.Run(rule.Name+"/hot", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Allow(context.Background(), rule, subjects[0])
				}
			})
		})
		b.Run(rule.Name+"/distinct", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 0))
				for pb.Next() {
					m.Allow(context.Background(), rule, subjects[r.IntN(len(subjects))])
				}
			})
		})
	}
}

func TestMemoryClockSteppingBackCountsOn(t *testing.T) {
	clk := newClock(time.Unix(1000, 0))
	m, err := NewMemory(MemoryConfig{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	rule := Rule{Name: "r", Limit: 2, Window: time.Second}
	subject := Subject("x")
	allowedCount := 0
	// Across a window seam and back: 0.9 s, 1.1 s, 0.95 s and 1.2 s after
	// a window start, two calls each. The stores that keep every window allow 4.
	for _, at := range []time.Duration{900, 1100, 950, 1200} {
		clk.Set(time.Unix(1000, 0).Add(at * time.Millisecond))
		for range 2 {
			d, err := m.Allow(context.Background(), rule, subject)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				allowedCount++
			}
		}
	}
	if allowedCount != 4 {
		t.Fatalf("allowed: got %d, want 4, as the shared stores decide", allowedCount)
	}
}
