package rlsd

import (
	"io"
	"net/http"
	"sync/atomic"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/server/internal/ops"
)

// healthNames are the services the gRPC health service answers for:
// the whole server (""), the service by its name, and "ratelimit", which
// envoyproxy/ratelimit's health service answers for.
var healthNames = []string{"", serviceName, "ratelimit"}

// healthState is admit rls's one health state, which the gRPC health
// service, /healthz and /healthcheck answer alike: serving from the start
// (admit rls starts only with its configuration loaded), not serving from
// the moment it drains. It is safe for concurrent use.
type healthState struct {
	grpc     *health.Server
	draining atomic.Bool
}

func newHealthState() *healthState {
	h := &healthState{grpc: health.NewServer()}
	for _, name := range healthNames {
		h.grpc.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	return h
}

// drain turns every answer to not serving, for good: the process is
// stopping and its calls in flight are finishing.
func (h *healthState) drain() {
	h.draining.Store(true)
	h.grpc.Shutdown()
}

// healthcheck answers as envoyproxy/ratelimit's /healthcheck: 200 and
// "OK", or 500 with no body.
func (h *healthState) healthcheck(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if h.draining.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	io.WriteString(w, "OK")
}

// healthz answers as the proxy's /healthz: 200 and "ok", or 503 while it
// drains.
func (h *healthState) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if h.draining.Load() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// metricsMux is the metrics listener's: /metrics, the health pages,
// /rlconfig, the configuration in force as envoyproxy/ratelimit's debug
// listener prints it, and /stats, the counters under the reference's stat
// names. No pprof: the reference's debug listener serves it; admit's does
// not, since a profile is the process's memory.
func metricsMux(tel *ops.Telemetry, h *healthState, svc *rls.Service, stats *refStats) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.Handler)
	mux.HandleFunc("GET /stats", stats.serveStats)
	mux.HandleFunc("GET /healthz", h.healthz)
	mux.HandleFunc("GET /healthcheck", h.healthcheck)
	mux.HandleFunc("GET /rlconfig", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, svc.Config().Dump())
	})
	return mux
}

// httpMux is the --http-listen listener's, envoyproxy/ratelimit's
// HOST:PORT: /healthcheck, what its probes call, and /json.
func httpMux(h *healthState, svc *rls.Service) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthcheck", h.healthcheck)
	mux.Handle("/json", svc.JSONHandler())
	return mux
}
