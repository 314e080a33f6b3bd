package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/grpchealth"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/health"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/demo"
	"github.com/admitgo/admit/server/internal/drain"
	"github.com/admitgo/admit/server/internal/ops"
	"github.com/admitgo/admit/server/internal/servertls"
	"github.com/admitgo/admit/server/listener"
	"github.com/admitgo/admit/server/storeurl"
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
	// healthTTL is how long a health status is served from the cache.
	healthTTL = time.Second
)

// server is the admit proxy built from a config: the door, the proxy behind
// it, the health cache and the metrics endpoint. Build it with newServer,
// bind its listeners with listen, run it with serve and release it with
// close.
type server struct {
	cfg      config.Config
	log      *slog.Logger
	tel      *ops.Telemetry
	access   *accessLog   // nil: off
	demo     *demo.App    // the demo upstream; nil unless --demo without --upstream
	store    *sharedStore // nil for the memory store
	resolver *clientip.Resolver
	health   grpchealth.Checker // cached; reports draining at once
	draining atomic.Bool
	proxy    http.Handler // to the upstream, unlimited
	// gen is what the configuration loaded last built: the door and the
	// handler tree, which a reload replaces in one step. handler serves
	// the proxy's listener from it.
	gen     atomic.Pointer[generation]
	handler http.Handler
	auth    *authFront // admit auth's decisions, which handler and --grpc-listen answer from; nil for the proxy
	// door is the door startup built, for what runs before serve; a reload
	// leaves it behind, so anything that runs later reads gen.
	door *admit.Door

	// reparse reads the configuration again as startup read it (the same
	// flags, the environment, the config file); nil: reloads are refused.
	reparse  func() (config.Config, error)
	hangups  <-chan os.Signal // each one reloads; nil: none
	reloadMu sync.Mutex       // serialises reloads
	reloads  reloadCounter

	malformed    malformedCounts
	malformedReg metric.Registration
	stripped     strippedCounts // the proxy's stripped facts, by family
	strippedReg  metric.Registration
	conns        listener.Counts // the proxy listener's
	metricsConns listener.Counts // the metrics listener's
	grpcConns    listener.Counts // --grpc-listen's, in admit auth
	connsReg     metric.Registration
	tls          *servertls.Reloader // nil without --tls-cert

	ln, metricsLn, grpcLn net.Listener // set by listen; grpcLn with --grpc-listen only

	upkeepOnce sync.Once
	stopUpkeep func() // stops the store's upkeep and waits for it; nil until it starts

	// Closed as the drain passes its steps, so that tests can follow it.
	drainStarted   chan struct{} // health reports draining
	listenerClosed chan struct{} // the proxy accepts no more connections
}

// newServer builds a server from cfg. It fails on configuration the parser
// cannot check (a certificate that does not load, a store URL its driver
// refuses), never because the upstream or the store is down.
func newServer(ctx context.Context, cfg config.Config, log *slog.Logger) (_ *server, err error) {
	s := &server{cfg: cfg, log: log, drainStarted: make(chan struct{}), listenerClosed: make(chan struct{})}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := cfg.CheckOffline(); err != nil {
		return nil, usageError{Err: err}
	}
	if err := checkPassHeaders(cfg.PassHeaders); err != nil {
		return nil, usageError{Err: err}
	}
	if limit, ok := openFilesLimit(); ok {
		if err := checkDescriptors(cfg, limit); err != nil {
			return nil, usageError{Err: err}
		}
	}
	if s.tel, err = ops.NewTelemetry(); err != nil {
		return nil, err
	}
	if cfg.TLSCert != "" {
		front := "admit"
		if cfg.Auth {
			front = "admit auth"
		}
		s.tls, err = servertls.New(servertls.Config{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, Front: front,
			Now: s.clock, Logger: log, MeterProvider: s.tel.Provider})
		if err != nil {
			return nil, usageError{Err: err}
		}
	}
	var stderr io.Writer = os.Stderr
	if cfg.Stderr != nil {
		stderr = cfg.Stderr
	}
	if s.access, err = openAccessLog(cfg, stderr, s.clock); err != nil {
		return nil, usageError{Err: err}
	}
	target := cfg.Upstream
	if target == nil && !cfg.Auth {
		if s.demo, err = demo.Start(); err != nil {
			return nil, err
		}
		target, _ = url.Parse(s.demo.URL)
	}
	if s.store, err = openStore(ctx, cfg, s.tel.Provider, log); err != nil {
		return nil, err
	}

	s.resolver, err = clientip.New(clientip.Config{
		TrustedProxies: cfg.TrustedProxies,
		MeterProvider:  s.tel.Provider,
		Logger:         log,
	})
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}

	if cfg.Auth {
		// Nothing is forwarded: reaching the proxy's place is the decision
		// to admit.
		s.health = health.Cached(grpchealth.NewStaticChecker(), s.draining.Load, healthTTL, nil)
		s.proxy = admitted
	} else {
		transport := upstreamTransport(cfg)
		if s.health, err = s.upstreamHealth(target, transport); err != nil {
			return nil, err
		}
		rules := headerRules{keepOverrides: cfg.MethodOverride, stripped: &s.stripped, pass: make(map[string]bool)}
		for _, name := range cfg.PassHeaders {
			rules.pass[name] = true
		}
		s.proxy = newProxy(target, s.resolver, rules, cfg.Upgrades, transport, log)
	}
	g, err := s.build(cfg, nil)
	if err != nil {
		return nil, err
	}
	s.gen.Store(g)
	s.door = g.door
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.gen.Load().front.ServeHTTP(w, r) })
	if cfg.Auth {
		s.auth = newAuthFront(s, cfg.DenyStatus)
		s.handler = s.auth.withEnvoyHTTP(cfg.EnvoyHTTPPrefix)
	}
	if err := s.registerMetrics(); err != nil {
		return nil, err
	}
	upstream := "none: admit auth decides for a front"
	if target != nil {
		upstream = target.Redacted()
	}
	log.Info("admit: starting", "upstream", upstream, "upstream_health", cfg.UpstreamHealth,
		config.FieldRoutes, len(cfg.Routes), "trusted_proxies", len(cfg.TrustedProxies),
		"proxy_protocol_from", len(cfg.ProxyProtocolFrom), "shadow", cfg.Shadow,
		"store", cfg.Store.Kind, "store_url", storeurl.Redact(cfg.Store.URL), "store_fail", cfg.StoreFail.String(),
		"config", cfg.ConfigFile)
	logRoutes(log, cfg, s.door)
	return s, nil
}

// upstreamHealth is the health the server reports: the upstream's, probed
// at --upstream-health and cached, or always serving without one.
func (s *server) upstreamHealth(target *url.URL, transport http.RoundTripper) (grpchealth.Checker, error) {
	var inner grpchealth.Checker = grpchealth.NewStaticChecker()
	if s.cfg.UpstreamHealth != "" {
		// Joined as the proxy joins request paths to the upstream's.
		path, query, _ := strings.Cut(s.cfg.UpstreamHealth, "?")
		probe := target.JoinPath(path)
		probe.RawQuery = query
		var err error
		if inner, err = health.HTTP(&http.Client{Transport: transport}, probe.String()); err != nil {
			return nil, fmt.Errorf("admit: --upstream-health %q: %w", s.cfg.UpstreamHealth, err)
		}
	}
	return health.Cached(inner, s.draining.Load, healthTTL, nil), nil
}

// serve serves until ctx ends or a listener fails, then drains: health
// reports draining, after DrainDelay the listener closes, and in-flight
// requests get DrainTimeout to finish. It returns nil after a drain.
func (s *server) serve(ctx context.Context) error {
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug) // its lines name clients
	srv := s.proxyServer(errorLog)
	engine := s.h1Engine(srv)
	msrv := s.metricsServer(errorLog)

	var wg sync.WaitGroup
	defer wg.Wait()
	s.startUpkeep()
	failed := make(chan error, 3)
	wg.Go(func() {
		var err error
		switch {
		case engine != nil:
			err = engine.Serve(s.ln)
		case s.tls != nil:
			err = srv.ServeTLS(s.ln, "", "")
		default:
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
	grpcSrv := s.serveGRPC(&wg, failed)
	s.log.Info("admit: serving", "addr", s.ln.Addr().String(), "metrics_addr", s.metricsLn.Addr().String(), grpcSrv.logAttr(),
		"tls", s.tls != nil, "h2c", s.cfg.H2C, config.FieldEngine, s.cfg.HTTPEngine, "proxy_protocol", len(s.cfg.ProxyProtocolFrom) > 0)

	var err error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err = <-failed:
			break wait
		case <-s.hangups:
			s.reload()
		}
	}
	s.draining.Store(true)
	grpcSrv.drain()
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
	var proxy drain.Server = srv
	if engine != nil {
		proxy = engine
	}
	if drain.Stop(s.cfg.DrainTimeout, append([]drain.Server{proxy}, grpcSrv.servers()...), msrv) {
		s.log.Warn("admit: drain timed out; closing the connections left", "timeout", s.cfg.DrainTimeout)
	}
	if err != nil {
		return err
	}
	s.log.Info("admit: stopped")
	return nil
}

// metricsServer returns the server of the metrics listener, bounded and
// kept to its own names as every operations listener is (package ops).
func (s *server) metricsServer(errorLog *log.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.tel.Handler)
	mux.Handle("GET /healthz", health.Handler(s.health))
	mux.Handle("GET /admit/status", &statusPage{s: s, gather: s.tel.Gatherer, now: s.clock})
	s.adminRoutes(mux)
	srv := s.tel.Server("metrics", s.cfg.AdminHosts, mux)
	srv.ErrorLog = errorLog
	return srv
}

// clock is the door's clock: the configuration's, or time.Now.
func (s *server) clock() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// startUpkeep starts the shared store's upkeep (creating the PostgreSQL
// table when startup could not, sweeping expired rows) once, until close.
func (s *server) startUpkeep() {
	s.upkeepOnce.Do(func() {
		if s.store != nil {
			s.stopUpkeep = s.store.Maintain()
		}
	})
}

// close releases what newServer opened. It is safe on a partly built server.
func (s *server) close() {
	if s.stopUpkeep != nil {
		s.stopUpkeep()
	}
	s.access.close()
	for _, ln := range []net.Listener{s.ln, s.metricsLn, s.grpcLn} {
		if ln != nil {
			ln.Close()
		}
	}
	if g := s.gen.Load(); g != nil {
		g.door.Close()
	}
	if s.malformedReg != nil {
		s.malformedReg.Unregister()
	}
	if s.strippedReg != nil {
		s.strippedReg.Unregister()
	}
	if s.connsReg != nil {
		s.connsReg.Unregister()
	}
	if s.store != nil {
		s.store.close()
	}
	if s.demo != nil {
		s.demo.Close()
	}
	if s.tel != nil {
		s.tel.Close()
	}
}
