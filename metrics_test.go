package admit

import (
	"context"
	"net/http"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collect returns every int64 data point the reader sees, by instrument name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string][]metricdata.DataPoint[int64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := make(map[string][]metricdata.DataPoint[int64])
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				out[m.Name] = append(out[m.Name], data.DataPoints...)
			case metricdata.Gauge[int64]:
				out[m.Name] = append(out[m.Name], data.DataPoints...)
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// outcomes sums admit.door.requests by group/outcome.
func outcomes(t *testing.T, points []metricdata.DataPoint[int64]) map[string]int64 {
	t.Helper()
	got := make(map[string]int64)
	for _, p := range points {
		g, _ := p.Attributes.Value(attrGroup)
		o, _ := p.Attributes.Value(attrOutcome)
		if p.Attributes.Len() != 2 {
			t.Errorf("requests point carries %v, want only group and outcome", p.Attributes.ToSlice())
		}
		got[g.AsString()+"/"+o.AsString()] += p.Value
	}
	return got
}

func TestMetricsCountEveryOutcome(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	clk := newClock()
	d := newDoor(t, clk, Config{MeterProvider: mp, Budgets: map[Group]Budget{GroupWebhook: tinyWebhook()}})

	link := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range defaults[GroupLink].Burst {
		allowed(t, link, "192.0.2.1:1", http.StatusOK)
	}
	rejected(t, link, "192.0.2.1:1", http.StatusTooManyRequests, "1")
	allowed(t, d.Wrap(GroupLink, status(http.StatusNotFound), nil), "192.0.2.2:1", http.StatusNotFound)
	allowed(t, d.Wrap(GroupLink, status(http.StatusBadGateway), nil), "192.0.2.2:1", http.StatusBadGateway)
	allowed(t, d.Wrap(GroupLink, status(http.StatusOK), status(http.StatusOK)), "192.0.2.1:1", http.StatusOK) // cached

	b := newBlocker(http.StatusOK)
	health := d.Wrap(GroupHealth, b, nil)
	release := hold(t, health, b, "192.0.2.3:1", defaults[GroupHealth].PerClient)
	rejected(t, health, "192.0.2.3:1", http.StatusTooManyRequests, "1")
	release()

	hooks := d.Wrap(GroupWebhook, status(http.StatusOK), nil)
	allowed(t, hooks, "192.0.2.4:1", http.StatusOK)
	allowed(t, hooks, "192.0.2.5:1", http.StatusOK)
	allowed(t, hooks, "192.0.2.6:1", http.StatusOK) // evicts 192.0.2.4

	// Shadow mode, on a provider of its own (gauges of two doors on one
	// provider would overwrite each other): every would_* form.
	shadowReader := sdkmetric.NewManualReader()
	shadowMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(shadowReader))
	shadow := newDoor(t, clk, Config{MeterProvider: shadowMP, Shadow: true})
	sl := shadow.Wrap(GroupLink, status(http.StatusOK), nil)
	for range defaults[GroupLink].Burst + 1 {
		allowed(t, sl, "192.0.2.7:1", http.StatusOK)
	}
	sb := newBlocker(http.StatusOK)
	sh := shadow.Wrap(GroupLink, sb, nil)
	r1 := hold(t, sh, sb, "192.0.2.8:1", defaults[GroupLink].PerClient)
	allowed(t, shadow.Wrap(GroupLink, status(http.StatusOK), nil), "192.0.2.8:1", http.StatusOK)
	sb2 := &blocker{entered: sb.entered, release: make(chan struct{}), code: http.StatusOK}
	r2 := hold(t, shadow.Wrap(GroupLink, sb2, nil), sb2, "192.0.2.9:1", defaults[GroupLink].Inflight-defaults[GroupLink].PerClient)
	allowed(t, shadow.Wrap(GroupLink, status(http.StatusOK), nil), "192.0.2.10:1", http.StatusOK)

	points := collect(t, reader)
	shadowPoints := collect(t, shadowReader)
	got := outcomes(t, append(points["admit.door.requests"], shadowPoints["admit.door.requests"]...))
	want := map[string]int64{
		"link/ok":                       2 * int64(defaults[GroupLink].Burst), // requests still held are not settled yet
		"link/rate_limited":             1,
		"link/client_error":             1,
		"link/server_error":             1,
		"link/cached":                   1,
		"health/client_concurrency":     1,
		"health/ok":                     int64(defaults[GroupHealth].PerClient),
		"webhook/ok":                    3,
		"link/would_rate_limited":       1,
		"link/would_client_concurrency": 1,
		"link/would_group_concurrency":  1,
	}
	r1()
	r2()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("requests{%s}: got %d, want %d", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && v != 0 {
			t.Errorf("requests{%s}: got %d, want none", k, v)
		}
	}

	if v := gauge(points["admit.door.evictions"], "webhook"); v != 1 {
		t.Errorf("evictions{webhook}: got %d, want 1", v)
	}
	for _, name := range []string{"admit.door.inflight", "admit.door.clients"} {
		pts := points[name]
		if len(pts) == 0 {
			t.Errorf("%s: no data points", name)
		}
		for _, p := range pts {
			if _, ok := p.Attributes.Value(attrGroup); !ok || p.Attributes.Len() != 1 {
				t.Errorf("%s: point carries %v, want only the group", name, p.Attributes.ToSlice())
			}
		}
	}
	if v := gauge(points["admit.door.clients"], "webhook"); v != 2 {
		t.Errorf("clients{webhook}: got %d, want the full table of 2", v)
	}
	if v := gauge(shadowPoints["admit.door.inflight"], "link"); v != int64(defaults[GroupLink].Inflight) {
		t.Errorf("inflight{link}: got %d, want the shadow door's %d held requests", v, defaults[GroupLink].Inflight)
	}
}

// gauge sums the points of one group.
func gauge(points []metricdata.DataPoint[int64], group string) int64 {
	var sum int64
	for _, p := range points {
		if v, _ := p.Attributes.Value(attrGroup); v.AsString() == group {
			sum += p.Value
		}
	}
	return sum
}
