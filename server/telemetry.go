package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/admitgo/admit/internal/meter"
	"github.com/admitgo/admit/server/internal/opshost"
	"github.com/admitgo/admit/server/listener"
)

// telemetry is the server's meter provider and the /metrics handler that
// exports it in the Prometheus text format.
type telemetry struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
	gatherer prometheus.Gatherer // what handler exports
	// misdirected counts the requests an operations listener refused for
	// their Host, as admit.server.misdirected.
	misdirected metric.Int64Counter
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
	misdirected, err := mp.Meter(meter.Name).Int64Counter("admit.server.misdirected",
		metric.WithDescription("Requests an operations listener refused with 421 because their Host is not an IP address, localhost or a name of --admin-host, by listener."),
		metric.WithUnit("{request}"))
	if err != nil {
		mp.Shutdown(context.Background())
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return &telemetry{provider: mp, handler: h, gatherer: reg, misdirected: misdirected}, nil
}

// opsHandler keeps an operations listener, named listener in the metric,
// to its own names and those of names (see package opshost): no handler of
// next sees a request for another name.
func (t *telemetry) opsHandler(listener string, names []string, next http.Handler) http.Handler {
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.server.listener", listener)))
	return &opshost.Handler{Next: next, Names: names,
		Refused: func() { t.misdirected.Add(context.Background(), 1, attrs) }}
}

func (t *telemetry) close() { t.provider.Shutdown(context.Background()) }

// registerMetrics registers the server's own instruments: reloads,
// malformed requests and connections.
func (s *server) registerMetrics() (err error) {
	m := s.tel.provider.Meter(meter.Name)
	if err := s.reloads.register(m); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	if s.malformedReg, err = s.malformed.register(m); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	if s.strippedReg, err = s.stripped.register(m); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	if s.connsReg, err = listener.Register(m, s.listenerCounts()); err != nil {
		return fmt.Errorf("admit: metrics: %w", err)
	}
	return nil
}
