package redisquota_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ctx := context.Background()
	rule := quota.Rule{Name: "m", Limit: 1, Window: time.Minute}
	subject := quota.Subject("metrics")

	c := testredis.Client(t)
	up := newStore(t, c, testredis.Prefix(t), redisquota.Config{Now: newClock(t0).Now, MeterProvider: mp})
	opt := testredis.Options(t)
	opt.Addr = unreachable(t)
	down := redis.NewClient(opt)
	t.Cleanup(func() { down.Close() })
	closed := newStore(t, down, "m:", redisquota.Config{MeterProvider: mp})
	open := newStore(t, down, "m:", redisquota.Config{MeterProvider: mp, Failure: quota.FailOpen})

	up.Allow(ctx, rule, subject)           // allowed
	up.Allow(ctx, rule, subject)           // refused
	up.Allow(ctx, rule, subject)           // refused
	up.Allow(ctx, rule, "raw@example.com") // caller error: not a decision
	closed.Allow(ctx, rule, subject)       // failed_closed
	open.Allow(ctx, rule, subject)         // failed_open
	open.Allow(ctx, quota.Rule{}, subject) // caller error: not a decision

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"allowed": 1, "refused": 2, "failed_closed": 1, "failed_open": 1}
	got := map[string]int64{}
	var latencies uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					if store, _ := p.Attributes.Value("admit.quota.store"); store != attribute.StringValue("redis") {
						t.Errorf("store attribute: got %v, want redis", store.String())
					}
					outcome, _ := p.Attributes.Value("admit.quota.outcome")
					got[outcome.AsString()] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range data.DataPoints {
					latencies += p.Count
				}
			}
		}
	}
	for outcome, n := range want {
		if got[outcome] != n {
			t.Errorf("decisions{outcome=%s}: got %d, want %d", outcome, got[outcome], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("outcomes: got %v, want %v", got, want)
	}
	if latencies != 5 {
		t.Errorf("latency samples: got %d, want 5", latencies)
	}
}
