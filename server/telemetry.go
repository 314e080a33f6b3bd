package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/runtime"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// telemetry is the server's meter provider and the /metrics handler that
// exports it in the Prometheus text format.
type telemetry struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
	gatherer prometheus.Gatherer // what handler exports
}

// newTelemetry creates a meter provider with its own Prometheus registry, so
// that several servers in one process (tests) do not share series, and starts
// the Go runtime metrics on it.
func newTelemetry() (*telemetry, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("admit: metrics exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	if err := runtime.Start(runtime.WithMeterProvider(mp)); err != nil {
		mp.Shutdown(context.Background())
		return nil, fmt.Errorf("admit: runtime metrics: %w", err)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return &telemetry{provider: mp, handler: h, gatherer: reg}, nil
}

func (t *telemetry) close() { t.provider.Shutdown(context.Background()) }
