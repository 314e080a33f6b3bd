package memquota_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/quota/quotatest"
)

// t0 is aligned to every window the tests use.
var t0 = time.Unix(1_700_000_000-1_700_000_000%3600, 0)

// TestCharger runs the behaviour every store shares. Instances of Memory
// share nothing, so the second instance is the first again.
func TestCharger(t *testing.T) {
	quotatest.TestCharger(t, func(t *testing.T, cfg quotatest.Config) (first, second quota.Charger) {
		m := newMemory(t, memquota.Config{Now: cfg.Now})
		return m, m
	})
}

func newMemory(t *testing.T, cfg memquota.Config) *memquota.Memory {
	t.Helper()
	m, err := memquota.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func allowN(t *testing.T, l quota.Charger, rule quota.Rule, subject string, n int) quota.Decision {
	t.Helper()
	d, err := l.AllowN(context.Background(), rule, subject, n)
	if err != nil {
		t.Fatalf("AllowN(%q, %d): %v", rule.Name, n, err)
	}
	return d
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     memquota.Config
		wantErr bool
	}{
		{"zero", memquota.Config{}, false},
		{"bounded", memquota.Config{MaxBuckets: 1}, false},
		{"negative bound", memquota.Config{MaxBuckets: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := memquota.New(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Errorf("New(%+v): got %v, want error %v", tt.cfg, err, tt.wantErr)
			}
		})
	}
}

// TestCallerErrorsStoreNothing checks what the suite cannot see: a refused
// caller error creates no bucket and is not counted as a decision.
func TestCallerErrorsStoreNothing(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m := newMemory(t, memquota.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	ok := quota.Rule{Name: "r", Limit: 1, Window: time.Second}
	tests := []struct {
		name    string
		rule    quota.Rule
		subject string
		n       int
		want    error
	}{
		{"raw ip", ok, "203.0.113.7", 1, quota.ErrSubject},
		{"raw email", ok, "someone@example.com", 1, quota.ErrSubject},
		{"uppercase", ok, "E3B0C44298FC1C149AFBF4C8996FB924", 1, quota.ErrSubject},
		{"zero limit", quota.Rule{Name: "r", Window: time.Second}, quota.Subject("x"), 1, quota.ErrRule},
		{"zero window", quota.Rule{Name: "r", Limit: 1}, quota.Subject("x"), 1, quota.ErrRule},
		{"negative cost", ok, quota.Subject("x"), -1, quota.ErrRule},
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

func TestLooksStoreNoBucket(t *testing.T) {
	m := newMemory(t, memquota.Config{Now: testclock.New(t0).Now})
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		rule := quota.Rule{Name: "r", Limit: 1, Window: time.Second, Algorithm: alg}
		for i := range 5 {
			if d := allowN(t, m, rule, quota.Subject(fmt.Sprint(i)), 0); !d.Allowed || d.Remaining != 1 {
				t.Errorf("%v look %d: got %+v, want allowed with 1 remaining", alg, i, d)
			}
		}
	}
	if got := m.Len(); got != 0 {
		t.Errorf("buckets after looks: got %d, want 0", got)
	}
}

func TestBounded(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	clk := testclock.New(t0)
	m := newMemory(t, memquota.Config{
		MaxBuckets:    10,
		Now:           clk.Now,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	rule := quota.Rule{Name: "r", Limit: 1, Window: time.Minute}
	gcra := quota.Rule{Name: "g", Limit: 1, Window: time.Minute, Algorithm: quota.TokenBucket}

	// Expired buckets make room without evicting anything live.
	for i := range 5 {
		allowN(t, m, rule, quota.Subject(fmt.Sprint("fw", i)), 1)
		allowN(t, m, gcra, quota.Subject(fmt.Sprint("g", i)), 1)
	}
	clk.Advance(time.Minute)
	for i := range 10 {
		allowN(t, m, rule, quota.Subject(fmt.Sprint("new", i)), 1)
	}
	if got := evictions(t, reader); got != 0 {
		t.Errorf("live buckets evicted while expired ones remained: got %d, want 0", got)
	}

	// Past the bound, with every bucket at its limit, nothing live goes:
	// the newcomers share the rule's overflow bucket, which admits one.
	admitted := 0
	for i := range 100 {
		if allowN(t, m, rule, quota.Subject(fmt.Sprint("rotating", i)), 1).Allowed {
			admitted++
		}
	}
	if admitted != 1 {
		t.Errorf("newcomers admitted by the overflow: got %d, want 1", admitted)
	}
	if got := m.Len(); got != 10 {
		t.Errorf("buckets: got %d, want 10", got)
	}
	if got := evictions(t, reader); got != 0 {
		t.Errorf("evictions: got %d, want 0", got)
	}
	if got := counted(t, reader, "admit.quota.overflows"); got != 100 {
		t.Errorf("overflows: got %d, want 100", got)
	}
	// The ten spent subjects are still tracked precisely.
	for i := range 10 {
		if d := allowN(t, m, rule, quota.Subject(fmt.Sprint("new", i)), 1); d.Allowed {
			t.Errorf("spent subject %d: got %+v, want refused", i, d)
		}
	}
}

func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m := newMemory(t, memquota.Config{Now: testclock.New(t0).Now, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	rule := quota.Rule{Name: "r", Limit: 2, Window: time.Minute}
	for range 5 {
		m.Allow(context.Background(), rule, quota.Subject("x"))
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

func TestAllowNAllocs(t *testing.T) {
	m := newMemory(t, memquota.Config{Now: testclock.New(t0).Now, MeterProvider: noop.NewMeterProvider()})
	ctx := context.Background()
	s := quota.Subject("x")
	for _, rule := range []quota.Rule{
		{Name: "fw", Limit: 1 << 30, Window: time.Hour},
		{Name: "gcra", Limit: 1 << 30, Window: time.Hour, Algorithm: quota.TokenBucket},
	} {
		m.AllowN(ctx, rule, s, 1)
		if got := testing.AllocsPerRun(100, func() { m.AllowN(ctx, rule, s, 1) }); got != 0 {
			t.Errorf("%s: allocations per AllowN on a known bucket: got %v, want 0", rule.Name, got)
		}
	}
}

// TestClockSteppingBackCountsOn is where Memory differs from the shared
// stores by design, so the suite leaves it out: a bucket keeps only its
// latest window, and a clock that steps back counts on there.
func TestClockSteppingBackCountsOn(t *testing.T) {
	clk := testclock.New(time.Unix(1000, 0))
	m := newMemory(t, memquota.Config{Now: clk.Now})
	rule := quota.Rule{Name: "r", Limit: 2, Window: time.Second}
	subject := quota.Subject("x")
	allowedCount := 0
	// Across a window seam and back: 0.9 s, 1.1 s, 0.95 s and 1.2 s after
	// a window start, two calls each. The stores that keep every window allow 4.
	for _, at := range []time.Duration{900, 1100, 950, 1200} {
		clk.Set(time.Unix(1000, 0).Add(at * time.Millisecond))
		for range 2 {
			if allowN(t, m, rule, subject, 1).Allowed {
				allowedCount++
			}
		}
	}
	if allowedCount != 4 {
		t.Fatalf("allowed: got %d, want 4, as the shared stores decide", allowedCount)
	}
}

// collect gathers admit.quota.decisions by store and outcome
// ("memory/allowed") and the number of latency samples by store.
func collect(t *testing.T, reader *sdkmetric.ManualReader) (decisions, latencies map[string]int64) {
	t.Helper()
	decisions, latencies = map[string]int64{}, map[string]int64{}
	for _, m := range metrics(t, reader) {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			if m.Name != "admit.quota.decisions" {
				continue
			}
			for _, dp := range data.DataPoints {
				store, _ := dp.Attributes.Value("admit.quota.store")
				outcome, _ := dp.Attributes.Value("admit.quota.outcome")
				decisions[store.AsString()+"/"+outcome.AsString()] += dp.Value
			}
		case metricdata.Histogram[float64]:
			if m.Name != "admit.quota.latency" {
				continue
			}
			for _, dp := range data.DataPoints {
				store, _ := dp.Attributes.Value("admit.quota.store")
				latencies[store.AsString()] += int64(dp.Count)
			}
		}
	}
	return decisions, latencies
}

// evictions sums admit.quota.evictions, wanting every point on store
// "memory".
func evictions(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	return counted(t, reader, "admit.quota.evictions")
}

// counted sums the counter name, wanting every point on store "memory".
func counted(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var n int64
	for _, m := range metrics(t, reader) {
		data, ok := m.Data.(metricdata.Sum[int64])
		if !ok || m.Name != name {
			continue
		}
		for _, dp := range data.DataPoints {
			if store, _ := dp.Attributes.Value("admit.quota.store"); store.AsString() != "memory" {
				t.Errorf("%s: store attribute %q, want memory", name, store.AsString())
			}
			n += dp.Value
		}
	}
	return n
}

func metrics(t *testing.T, reader *sdkmetric.ManualReader) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	var all []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		all = append(all, sm.Metrics...)
	}
	return all
}
