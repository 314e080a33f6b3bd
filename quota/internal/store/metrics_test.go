package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/quota"
)

// collect gathers admit.quota.decisions by store and outcome
// ("memory/allowed") and the number of latency samples by store.
func collect(t *testing.T, reader *sdkmetric.ManualReader) (decisions, latencies map[string]int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	decisions, latencies = map[string]int64{}, map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
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
	}
	return decisions, latencies
}

func TestMetricsRecord(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errDown := errors.New("down")
	m.Record(ctx, quota.Decision{Allowed: true}, nil, time.Millisecond)
	m.Record(ctx, quota.Decision{Allowed: true}, nil, time.Millisecond)
	m.Record(ctx, quota.Decision{}, nil, time.Millisecond)
	m.Record(ctx, quota.Decision{Allowed: true}, errDown, time.Millisecond)
	m.Record(ctx, quota.Decision{}, errDown, time.Millisecond)
	m.Record(ctx, quota.Decision{}, fmt.Errorf("wrapped: %w", errDown), time.Millisecond)
	// Caller errors are not decisions.
	m.Record(ctx, quota.Decision{}, quota.ErrSubject, time.Millisecond)
	m.Record(ctx, quota.Decision{}, fmt.Errorf("x: %w", quota.ErrRule), time.Millisecond)

	decisions, latencies := collect(t, reader)
	want := map[string]int64{"test/allowed": 2, "test/refused": 1, "test/failed_open": 1, "test/failed_closed": 2}
	if fmt.Sprint(decisions) != fmt.Sprint(want) {
		t.Errorf("decisions: got %v, want %v", decisions, want)
	}
	if got := latencies["test"]; got != 6 {
		t.Errorf("latency samples: got %d, want 6", got)
	}
}

// Two stores of one kind on one provider (admit rls's main and per-second
// Redis stores) count into the same series, as two synchronous counters did.
func TestMetricsTwoStoresOneSeries(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	a, err := NewMetrics(mp, "redis")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewMetrics(mp, "redis")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a.Record(ctx, quota.Decision{Allowed: true}, nil, time.Millisecond)
	b.Record(ctx, quota.Decision{Allowed: true}, nil, time.Millisecond)
	b.Record(ctx, quota.Decision{}, nil, time.Millisecond)
	for range 2 { // a cumulative counter reads the same on a second collection
		decisions, _ := collect(t, reader)
		want := map[string]int64{"redis/allowed": 2, "redis/refused": 1}
		if fmt.Sprint(decisions) != fmt.Sprint(want) {
			t.Errorf("decisions: got %v, want %v", decisions, want)
		}
	}
}

// TestMetricsShareCounts: stores of one kind on one provider share one
// set of counts and one callback, however many are made; another kind has
// its own.
func TestMetricsShareCounts(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	first, err := NewMetrics(mp, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		m, err := NewMetrics(mp, "postgres")
		if err != nil {
			t.Fatal(err)
		}
		if m.counts != first.counts {
			t.Fatal("a second postgres store has counts of its own")
		}
	}
	other, err := NewMetrics(mp, "redis")
	if err != nil {
		t.Fatal(err)
	}
	if other.counts == first.counts {
		t.Error("redis and postgres share counts")
	}
}

func TestMetricsNil(t *testing.T) {
	var m *Metrics
	m.Record(context.Background(), quota.Decision{Allowed: true}, nil, time.Millisecond) // must not panic
}

func TestMetricsRecordAllocs(t *testing.T) {
	m, err := NewMetrics(noop.NewMeterProvider(), "memory")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got := testing.AllocsPerRun(100, func() { m.Record(ctx, quota.Decision{Allowed: true}, nil, time.Millisecond) }); got != 0 {
		t.Errorf("allocations per Record: got %v, want 0", got)
	}
}

// BenchmarkMetricsRecord measures what counting one decision costs a
// caller under the SDK, from a context as deep as a proxy request's.
func BenchmarkMetricsRecord(b *testing.B) {
	m, err := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())), "postgres")
	if err != nil {
		b.Fatal(err)
	}
	type key int
	ctx := context.Background()
	for i := range 8 {
		ctx = context.WithValue(ctx, key(i), i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Record(ctx, quota.Decision{Allowed: true}, nil, 300*time.Microsecond)
		}
	})
}
