package ops

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/admitgo/admit/internal/meter"
	"github.com/admitgo/admit/server/internal/opshost"
)

// The bounds of an operations listener's server: a scrape is one small
// request, sent at once by a client on the same host or network. Short
// header and idle timeouts give back a slot held by a client that sends
// nothing soon; a Prometheus whose interval is longer reconnects for each
// scrape: a handshake, not a held slot. The header bound is the proxy's.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 15 * time.Second
	maxHeaderBytes    = 64 << 10
)

// Telemetry is a front's meter provider and the /metrics handler that
// exports it. Its fields do not change once made; it is safe for
// concurrent use.
type Telemetry struct {
	Provider *sdkmetric.MeterProvider
	Handler  http.Handler        // /metrics
	Gatherer prometheus.Gatherer // what Handler exports
	// misdirected counts the requests an operations listener refused for
	// their Host, as admit.server.misdirected.
	misdirected metric.Int64Counter
}

// NewTelemetry creates a meter provider with its own Prometheus registry
// and starts the Go runtime metrics on it.
func NewTelemetry() (*Telemetry, error) {
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
	return &Telemetry{Provider: mp, Handler: h, Gatherer: reg, misdirected: misdirected}, nil
}

// Close shuts the meter provider down.
func (t *Telemetry) Close() { t.Provider.Shutdown(context.Background()) }

// Server returns the server of an operations listener serving mux, named
// listener in the metrics: no handler of mux sees a request whose Host is
// not one of the listener's own names or of names (--admin-host), and a
// client that holds a connection idle or stalls mid-request is cut.
func (t *Telemetry) Server(listener string, names []string, mux http.Handler) *http.Server {
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("admit.server.listener", listener)))
	guarded := &opshost.Handler{Next: mux, Names: names,
		Refused: func() { t.misdirected.Add(context.Background(), 1, attrs) }}
	return &http.Server{
		Handler:           guarded,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}
