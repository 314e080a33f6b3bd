package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/cmd/admit/internal/upstream"
	"github.com/admitgo/admit/health"
	"github.com/admitgo/admit/internal/meter"
)

// Limits of the proxy's HTTP server.
const (
	// maxHeaderBytes bounds request headers: HTTP/1.1 answers 431 past it, and
	// HTTP/2 derives its header list limit from it.
	maxHeaderBytes = 64 << 10
	// maxConcurrentStreams is how many requests one HTTP/2 connection may
	// have in flight.
	maxConcurrentStreams = 250
	readHeaderTimeout    = 10 * time.Second
	idleTimeout          = 2 * time.Minute
	// The metrics listener's bounds: a scrape is one small request.
	metricsReadTimeout  = 10 * time.Second
	metricsWriteTimeout = 30 * time.Second
	metricsIdleTimeout  = time.Minute
	// healthTTL is how long a health status is served from the cache.
	healthTTL = time.Second
)

// server is the admit proxy built from a config: the door, the proxy behind
// it, the health cache and the metrics endpoint. Build it with newServer,
// bind its listeners with listen, run it with serve and release it with
// close.
type server struct {
	cfg      config
	log      *slog.Logger
	tel      *telemetry
	demo     *demoApp     // the demo upstream; nil unless --demo without --upstream
	store    *sharedStore // nil for the memory store
	door     *admit.Door
	resolver *clientip.Resolver
	health   grpchealth.Checker // cached; reports draining at once
	draining atomic.Bool
	handler  *front // the proxy's routes

	malformed    malformedCounts
	malformedReg metric.Registration
	conns        connCounts // the proxy listener's
	connsReg     metric.Registration
	tlsCert      *tls.Certificate

	ln, metricsLn net.Listener // set by listen

	// Closed as the drain passes its steps, so that tests can follow it.
	drainStarted   chan struct{} // health reports draining
	listenerClosed chan struct{} // the proxy accepts no more connections
}

// newServer builds a server from cfg. It fails on configuration the parser
// cannot check (a certificate that does not load, a store URL its driver
// refuses), never because the upstream or the store is down.
func newServer(ctx context.Context, cfg config, log *slog.Logger) (_ *server, err error) {
	s := &server{cfg: cfg, log: log, drainStarted: make(chan struct{}), listenerClosed: make(chan struct{})}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := cfg.checkOffline(); err != nil {
		return nil, usageError{err}
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("admit: --tls-cert %q, --tls-key %q: %w", cfg.TLSCert, cfg.TLSKey, err)
		}
		s.tlsCert = &cert
	}
	if s.tel, err = newTelemetry(); err != nil {
		return nil, err
	}
	target := cfg.Upstream
	if target == nil {
		if s.demo, err = startDemo(); err != nil {
			return nil, err
		}
		target, _ = url.Parse(s.demo.url)
	}
	if s.store, err = openStore(ctx, cfg, s.tel.provider, log); err != nil {
		return nil, err
	}

	// The door fills each field the file leaves out with the group's default.
	budgets := make(map[admit.Group]admit.Budget)
	for _, g := range builtInGroups {
		budgets[g] = admit.Budget{}
	}
	maps.Copy(budgets, cfg.Budgets)
	if s.store != nil {
		for g, b := range budgets {
			b.Store = s.store.charger
			if cfg.StoreFail == storeFailLocal {
				b.Replicas = cfg.Replicas
			}
			budgets[g] = b
		}
	}
	s.resolver, err = clientip.New(clientip.Config{
		TrustedProxies: cfg.TrustedProxies,
		MeterProvider:  s.tel.provider,
		Logger:         log,
	})
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	s.door, err = admit.New(admit.Config{
		Budgets:       budgets,
		Shadow:        cfg.Shadow,
		Key:           s.resolver.Key,
		Now:           cfg.Now,
		Logger:        log,
		MeterProvider: s.tel.provider,
		PolicyHeaders: cfg.PolicyHeaders,
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("admit: budgets: %w", err)}
	}

	transport := cfg.Transport
	if transport == nil {
		transport = upstream.Transport()
	}
	var inner grpchealth.Checker = grpchealth.NewStaticChecker()
	if cfg.UpstreamHealth != "" {
		// Joined as the proxy joins request paths to the upstream's.
		path, query, _ := strings.Cut(cfg.UpstreamHealth, "?")
		probe := target.JoinPath(path)
		probe.RawQuery = query
		if inner, err = health.HTTP(&http.Client{Transport: transport}, probe.String()); err != nil {
			return nil, fmt.Errorf("admit: --upstream-health %q: %w", cfg.UpstreamHealth, err)
		}
	}
	s.health = health.Cached(inner, s.draining.Load, healthTTL, nil)

	proxy := newProxy(target, s.resolver, cfg.TrustedProxies, cfg.MethodOverride, transport, log)
	if s.handler, err = s.routes(proxy); err != nil {
		return nil, err
	}
	m := s.tel.provider.Meter(meter.Name)
	if s.malformedReg, err = s.malformed.register(m); err != nil {
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	if s.connsReg, err = s.conns.register(m); err != nil {
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	log.Info("admit: starting", "upstream", target.Redacted(), "upstream_health", cfg.UpstreamHealth,
		"routes", len(cfg.Routes), "trusted_proxies", len(cfg.TrustedProxies),
		"proxy_protocol_from", len(cfg.ProxyProtocolFrom), "shadow", cfg.Shadow,
		"store", cfg.Store.Kind, "store_url", redactURL(cfg.Store.URL), "store_fail", cfg.StoreFail,
		"config", cfg.ConfigFile)
	logRoutes(log, cfg, s.door)
	return s, nil
}

// logRoutes logs what is protected: one line per route, with its pattern
// and each of its limits' budget, and a warning when no route is
// configured, since every request then passes through unlimited.
func logRoutes(log *slog.Logger, cfg config, door *admit.Door) {
	if len(cfg.Routes) == 0 {
		log.Warn("admit: no route is configured, so every request passes through unlimited: add routes with --route or the config file's routes")
	}
	for _, r := range withGRPCHealth(cfg.Routes) {
		names := make([]string, len(r.Groups))
		for i, g := range r.Groups {
			names[i] = string(g)
		}
		log.Info("admit: route", "pattern", r.Pattern, "groups", strings.Join(names, ","), "limits", routeLimits(door, r))
	}
}

// routes puts every route behind the door, the gRPC health service in the
// health group, and the proxy, unlimited, for everything else, behind the
// front that canonicalises requests.
//
// Health routes are proxied to the upstream while the server runs, and
// answered from the health cache when they are over budget (which the door
// counts as cached) or the server is draining, so a drain shows at once.
func (s *server) routes(proxy http.Handler) (*front, error) {
	status := health.Handler(s.health)
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			status.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	})
	healthBudget, _ := s.door.Budget(admit.GroupHealth)
	_, grpc := grpchealth.NewHandler(s.health, grpcHealthOptions(healthBudget)...)
	table, err := newRouteTable(withGRPCHealth(s.cfg.Routes), s.cfg.RouteFolding)
	if err != nil {
		return nil, err
	}
	f := &front{table: table, rest: proxy, slashes: s.cfg.EscapedSlashes, overrides: s.cfg.MethodOverride,
		malformed: &s.malformed, door: s.door}
	for _, r := range table.routes {
		rt := admit.Route{Groups: r.Groups, Cost: r.Cost}
		var next http.Handler = proxy
		switch {
		case r.Pattern == grpcHealthPattern:
			next, rt.Overflow = grpc, grpc
		case s.cfg.isProbe(r):
			next, rt.Overflow = probe, status
		}
		h, err := s.door.Handler(rt, next)
		if err != nil {
			return nil, usageError{fmt.Errorf("admit: route %s: %w", r, err)}
		}
		f.handlers = append(f.handlers, h)
		fr := frontRoute{rt: rt, next: next}
		for _, g := range r.Groups {
			if b, _ := s.door.Budget(g); b.Key.PathValue != "" && !slices.Contains(fr.pathKeys, b.Key.PathValue) {
				fr.pathKeys = append(fr.pathKeys, b.Key.PathValue)
			}
		}
		f.routes = append(f.routes, fr)
	}
	return f, nil
}

// isProbe reports a route of health probes: one with a group that is, or is
// like, the health group. Its over-budget probes are answered from the
// health cache, never refused.
func (c *config) isProbe(r route) bool {
	for _, g := range r.Groups {
		if g == admit.GroupHealth || c.Likes[g] == admit.GroupHealth {
			return true
		}
	}
	return false
}

// grpcHealthOptions bound what a gRPC or Connect health call may make the
// process buffer: a message at most the health group's body cap, and no
// compressed messages at all, since a small gzip body can inflate to
// hundreds of megabytes and health checks are a few bytes anyway.
func grpcHealthOptions(b admit.Budget) []connect.HandlerOption {
	opts := []connect.HandlerOption{connect.WithCompression("gzip", nil, nil)}
	if b.MaxBodyBytes > 0 {
		opts = append(opts, connect.WithReadMaxBytes(int(min(b.MaxBodyBytes, math.MaxInt32))))
	}
	return opts
}

// grpcHealthPattern is where the gRPC health service is served: gRPC and
// Connect calls are POSTs to /grpc.health.v1.Health/METHOD.
const (
	grpcHealthPath    = "/" + grpchealth.HealthV1ServiceName + "/"
	grpcHealthPattern = "POST " + grpcHealthPath
)

// withGRPCHealth returns routes with the gRPC health service's route, in the
// health group, after them.
func withGRPCHealth(routes []route) []route {
	return append(slices.Clip(routes), route{Groups: []admit.Group{admit.GroupHealth}, Pattern: grpcHealthPattern,
		from: "the gRPC health service"})
}

// listen binds the proxy's and the metrics listeners. The proxy's accepts
// PROXY protocol headers from the configured peers.
func (s *server) listen() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("admit: --listen: %w", err)
	}
	mln, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("admit: --metrics-listen: %w", err)
	}
	s.metricsLn = mln
	s.ln = ln
	if len(s.cfg.ProxyProtocolFrom) > 0 {
		s.ln = clientip.ProxyProtocolListener(ln, s.cfg.ProxyProtocolFrom, 0)
	}
	s.ln = newConnLimit(s.ln, s.cfg.MaxConns, s.cfg.MaxConnsPerClient, 64, s.cfg.TrustedProxies, &s.conns)
	return nil
}

// serve serves until ctx ends or a listener fails, then drains: health
// reports draining, after DrainDelay the listener closes, and in-flight
// requests get DrainTimeout to finish. It returns nil after a drain.
func (s *server) serve(ctx context.Context) error {
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug) // its lines name clients
	srv := &http.Server{
		Handler:           s.handler,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxConcurrentStreams},
		ErrorLog:          errorLog,
	}
	srv.RegisterOnShutdown(func() { close(s.listenerClosed) }) // runs once the listener is closed
	if s.tlsCert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*s.tlsCert}, MinVersion: tls.VersionTLS12}
	}
	msrv := s.metricsServer(errorLog)

	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopBG()
	if s.store != nil && s.store.maintain != nil {
		wg.Go(func() { s.store.maintain(bg) })
	}
	failed := make(chan error, 2)
	wg.Go(func() {
		var err error
		if s.tlsCert != nil {
			err = srv.ServeTLS(s.ln, "", "")
		} else {
			err = srv.Serve(s.ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			failed <- fmt.Errorf("admit: serving: %w", err)
		}
	})
	wg.Go(func() {
		if err := msrv.Serve(s.metricsLn); !errors.Is(err, http.ErrServerClosed) {
			failed <- fmt.Errorf("admit: serving metrics: %w", err)
		}
	})
	s.log.Info("admit: serving", "addr", s.ln.Addr().String(), "metrics_addr", s.metricsLn.Addr().String(),
		"tls", s.tlsCert != nil, "proxy_protocol", len(s.cfg.ProxyProtocolFrom) > 0)

	var err error
	select {
	case <-ctx.Done():
	case err = <-failed:
	}
	s.draining.Store(true)
	close(s.drainStarted)
	s.log.Info("admit: draining", "delay", s.cfg.DrainDelay, "timeout", s.cfg.DrainTimeout)
	if err == nil && s.cfg.DrainDelay > 0 {
		t := time.NewTimer(s.cfg.DrainDelay)
		select {
		case <-t.C:
		case err = <-failed:
			t.Stop()
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		s.log.Warn("admit: drain timed out; closing the connections left", "timeout", s.cfg.DrainTimeout)
		srv.Close()
	}
	mctx, mcancel := context.WithTimeout(context.Background(), time.Second)
	defer mcancel()
	if msrv.Shutdown(mctx) != nil {
		msrv.Close()
	}
	if err != nil {
		return err
	}
	s.log.Info("admit: stopped")
	return nil
}

// metricsServer returns the server of the metrics listener. Scrapes are
// small and quick, so unlike the proxy it bounds every phase: a client that
// holds a connection idle or stalls mid-request is cut.
func (s *server) metricsServer(errorLog *log.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.tel.handler)
	mux.Handle("GET /healthz", health.Handler(s.health))
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       metricsIdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errorLog,
	}
}

// close releases what newServer opened. It is safe on a partly built server.
func (s *server) close() {
	if s.ln != nil {
		s.ln.Close()
		s.metricsLn.Close()
	}
	if s.door != nil {
		s.door.Close()
	}
	if s.malformedReg != nil {
		s.malformedReg.Unregister()
	}
	if s.connsReg != nil {
		s.connsReg.Unregister()
	}
	if s.store != nil {
		s.store.close()
	}
	if s.demo != nil {
		s.demo.close()
	}
	if s.tel != nil {
		s.tel.close()
	}
}
