package rlsd

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/admitgo/admit/internal/meter"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/drain"
	"github.com/admitgo/admit/server/internal/grpcserver"
	"github.com/admitgo/admit/server/internal/ops"
	"github.com/admitgo/admit/server/internal/servertls"
	"github.com/admitgo/admit/server/internal/store"
	"github.com/admitgo/admit/server/listener"
	"github.com/admitgo/admit/server/storeurl"
)

// watchInterval is how often admit rls looks whether its configuration
// files changed.
const watchInterval = time.Second

// serviceName is the gRPC service admit rls serves, as health checks
// name it.
const serviceName = "envoy.service.ratelimit.v3.RateLimitService"

// Run is the rls subcommand: Envoy's rate limit service on admit's
// stores. It serves until ctx ends; SIGHUP and a change of the
// configuration's files reload it, keeping the old one when the new one is
// refused. A bad flag or configuration exits 2. admit rls validate checks
// them without serving.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "validate" {
		return validate(args[1:], getenv, stdout)
	}
	o, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return config.UsageError{Err: err}
	}
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	defer signal.Stop(hangups)
	return serve(ctx, o, hangups, config.NewLogger(o.LogFormat, o.LogLevel, stderr))
}

func serve(ctx context.Context, o options, hangups <-chan os.Signal, log *slog.Logger) error {
	var cfg *rls.Config // nil with --xds-server: none until the server sends one
	if o.XDS.Server == "" {
		var err error
		if cfg, err = rls.Load(o.Config); err != nil {
			return config.UsageError{Err: err}
		}
	}
	tel, err := ops.NewTelemetry()
	if err != nil {
		return err
	}
	defer tel.Close()
	tlsConfig, err := serverTLS(o, tel.Provider, log)
	if err != nil {
		return config.UsageError{Err: err}
	}
	st, err := openStore(ctx, o, o.Store, o.storeFrom[0], tel.Provider, log)
	if err != nil {
		return err
	}
	var counter, perSecond rls.Counter
	var limiter quota.Charger
	if st != nil {
		counter, limiter = st.Counter, st.Charger
		stopUpkeep := st.Maintain()
		defer func() { stopUpkeep(); st.Close() }()
	}
	if o.PerSecondStore.Kind != "" {
		ps, err := openStore(ctx, o, o.PerSecondStore, o.storeFrom[1], tel.Provider, log)
		if err != nil {
			return err
		}
		if ps != nil {
			perSecond = ps.Counter
			stopUpkeep := ps.Maintain()
			defer func() { stopUpkeep(); ps.Close() }()
		}
	}
	svc, err := rls.New(rls.Options{
		Config: cfg, Counter: counter, PerSecondCounter: perSecond, Limiter: limiter, Failure: o.StoreFail, ShadowMode: o.Shadow, QuotaMode: o.QuotaMode,
		StopIncrementOverLimit: o.StopIncrement, LocalCacheBytes: o.LocalCacheBytes, NearLimitRatio: o.NearLimitRatio,
		Headers: o.headers(), MeterProvider: tel.Provider, Logger: log,
	})
	if errors.Is(err, quota.ErrRule) {
		return config.UsageError{Err: err} // a rule the store cannot enforce: a token bucket on memcached
	}
	if err != nil {
		return err
	}
	// The environment's settings first, since they may explain a failure
	// to listen; listening before the server is made, since a server made
	// before a listener failed would leave its stream workers running.
	logEnv(log, o)
	if o.XDS.Server != "" {
		stop, err := startXDS(ctx, o, svc, log)
		if err != nil || stop == nil {
			return err
		}
		defer stop()
	}
	ln, mln, hln, err := listen(ctx, o, tel)
	if err != nil {
		return err
	}
	hs := newHealthState()
	srv := newGRPCServer(svc, tlsConfig, hs)
	stats := &refStats{gatherer: tel.Gatherer, tags: string(o.StatsTags)}
	msrv := tel.Server("metrics", o.AdminHosts, metricsMux(tel, hs, svc, stats))
	errs := make(chan error, 3)
	go func() { errs <- srv.Serve(ln) }()
	go func() { errs <- msrv.Serve(mln) }()
	addrs := addresses{grpc: ln.Addr().String(), metrics: mln.Addr().String()}
	var hsrv *http.Server
	if hln != nil {
		hsrv = tel.Server("http", o.AdminHosts, httpMux(hs, svc))
		go func() { errs <- hsrv.Serve(hln) }()
		addrs.http = hln.Addr().String()
	}
	log.Info("admit rls: serving", "grpc_listen", addrs.grpc, "metrics_listen", addrs.metrics, "http_listen", addrs.http,
		"store", string(o.Store.Kind), "per_second_store", string(o.PerSecondStore.Kind), "store_fail", o.StoreFail.String(), "domains", svc.Config().Domains())
	stopStatsd := startStatsd(o, stats, log)
	if o.ready != nil {
		o.ready(addrs)
	}
	err = watch(ctx, o, svc, hangups, errs, log)
	hs.drain() // not serving, on every surface, while in-flight calls finish
	log.Info("admit rls: draining", "timeout", o.DrainTimeout)
	// The HTTP listener's /healthcheck answers draining until the gRPC
	// calls have finished, as the metrics listener's does.
	after := []drain.Server{msrv}
	if hsrv != nil {
		after = append(after, hsrv)
	}
	if drain.Stop(o.DrainTimeout, []drain.Server{drain.GRPC(srv)}, after...) {
		log.Warn("admit rls: drain timed out; cut the calls left", "timeout", o.DrainTimeout)
	}
	stopStatsd()
	return err
}

// startStatsd sends the stats to --statsd until the returned function is
// called, which sends them once more, with what the drained calls
// counted, and returns once they are sent or could not be.
func startStatsd(o options, stats *refStats, log *slog.Logger) (stop func()) {
	if o.Statsd.Addr == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		newStatsdSink(stats, o.Statsd, o.StatsdInterval, log).run(ctx)
	}()
	return func() { cancel(); <-done }
}

// serverTLS is the gRPC listener's TLS: nil without --tls-cert; else its
// certificate, reloaded when the files change, and with --client-ca the
// check of the clients' certificates.
func serverTLS(o options, mp metric.MeterProvider, log *slog.Logger) (*tls.Config, error) {
	if o.TLSCert == "" {
		return nil, nil
	}
	certs, err := servertls.New(servertls.Config{CertFile: o.TLSCert, KeyFile: o.TLSKey, Front: "admit rls",
		Now: o.now, Logger: log, MeterProvider: mp})
	if err != nil {
		return nil, err
	}
	c := certs.TLSConfig()
	if o.ClientCA != "" {
		if err := servertls.VerifyClients(c, o.ClientCA, o.ClientSAN); err != nil {
			return nil, fmt.Errorf("admit rls: %s %q: %w", o.caFrom, o.ClientCA, err)
		}
	}
	return c, nil
}

// addresses are the addresses admit rls listens on, once it serves; http
// is empty without --http-listen.
type addresses struct{ grpc, metrics, http string }

// newGRPCServer is grpc-go's server of svc, of the health service and of
// server reflection, so that grpcurl calls it without the proto files:
// grpc-go's own, not net/http's, since it answers small unary calls at
// about twice the rate (see docs/rls.md).
func newGRPCServer(svc *rls.Service, tlsConfig *tls.Config, hs *healthState) *grpc.Server {
	srv := grpc.NewServer(grpcserver.Options(tlsConfig)...)
	svc.Register(srv)
	healthpb.RegisterHealthServer(srv, hs.grpc)
	reflection.Register(srv)
	return srv
}

// referenceUnread is the warning startup logs and validate prints when
// envoyproxy/ratelimit's variables are set outside reference mode.
const referenceUnread = "envoyproxy/ratelimit's variables are set and not read: they are read with --env envoy (ADMIT_RLS_ENV=envoy), or run as ratelimit (see docs/rls.md)"

// logEnv logs the settings taken from the environment: in reference mode
// each of envoyproxy/ratelimit's variables that changes nothing here, and
// outside it each one set, which is not read.
func logEnv(log *slog.Logger, o options) {
	if len(o.fromEnv) > 0 {
		log.Info("admit rls: settings from the environment", "variables", strings.Join(o.fromEnv, ","))
	}
	for _, info := range o.infos {
		log.Info("admit rls: " + info)
	}
	if len(o.referenceEnv) > 0 {
		log.Warn("admit rls: "+referenceUnread, "variables", strings.Join(o.referenceEnv, ","))
	}
}

// listen listens on the service's address, under --max-conns and
// --max-conns-per-client, on the metrics' address, and on --http-listen's
// when given (hln nil otherwise), under the gRPC listener's caps since
// /json spends quota as a call does; their connections are counted in
// admit.server.connections as listeners rls, metrics and http.
func listen(ctx context.Context, o options, tel *ops.Telemetry) (ln, mln, hln net.Listener, err error) {
	var lc net.ListenConfig
	var open []net.Listener
	fail := func(e error) (net.Listener, net.Listener, net.Listener, error) {
		for _, l := range open {
			l.Close()
		}
		return nil, nil, nil, e
	}
	for _, a := range []struct {
		flag, addr string
		ln         *net.Listener
	}{{"grpc-listen", o.GRPCListen, &ln}, {"metrics-listen", o.MetricsListen, &mln}, {"http-listen", o.HTTPListen, &hln}} {
		if a.addr == "" {
			continue
		}
		if *a.ln, err = lc.Listen(ctx, "tcp", a.addr); err != nil {
			return fail(fmt.Errorf("admit rls: --%s %q: %w", a.flag, a.addr, err))
		}
		open = append(open, *a.ln)
	}
	counts := map[string]*listener.Counts{"rls": new(listener.Counts), "metrics": new(listener.Counts)}
	if hln != nil {
		counts["http"] = new(listener.Counts)
	}
	// The registration lives as long as the meter provider, which the
	// server closes.
	if _, err := listener.Register(tel.Provider.Meter(meter.Name), counts); err != nil {
		return fail(fmt.Errorf("admit rls: metrics: %w", err))
	}
	caps := listener.Caps{Max: o.MaxConns, PerClient: o.MaxConnsPerClient}
	ln = listener.Limit(ln, caps, counts["rls"])
	// The metrics listener under the proxy's defaults for its own.
	mln = listener.Limit(mln, listener.Caps{Max: o.MetricsMaxConns, PerClient: o.MetricsPerClient}, counts["metrics"])
	if hln != nil {
		hln = listener.Limit(hln, caps, counts["http"])
	}
	return ln, mln, hln, nil
}

// watch reloads on SIGHUP and when the configuration's files change,
// until ctx ends or a server fails.
func watch(ctx context.Context, o options, svc *rls.Service, hangups <-chan os.Signal, errs <-chan error, log *slog.Logger) error {
	tick := time.NewTicker(o.watchEvery)
	defer tick.Stop()
	var seen string
	if o.Config != "" {
		seen = fingerprint(o.Config)
	}
	reload := func(why string) {
		if o.Config == "" {
			log.Info("admit rls: no files to reload: the configuration comes from the xDS server", "trigger", why, "xds_server", o.XDS.Server)
			return
		}
		if err := svc.LoadFile(o.Config); err != nil {
			log.Error("admit rls: configuration refused; keeping the previous one", "trigger", why, "err", err)
			return
		}
		log.Info("admit rls: configuration reloaded", "trigger", why, "domains", svc.Config().Domains())
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case <-hangups:
			if o.Config != "" {
				seen = fingerprint(o.Config)
			}
			reload("SIGHUP")
		case <-tick.C:
			if o.Config == "" {
				continue
			}
			if f := fingerprint(o.Config); f != seen {
				seen = f
				reload("file change")
			}
		}
	}
}

// fingerprint names every file under path with its size and modification
// time, so that a change, an added or a removed file changes it.
func fingerprint(path string) string {
	var b strings.Builder
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
			fmt.Fprintf(&b, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

// startXDS starts the client of --xds-server and waits for the first
// configuration it accepts, as envoyproxy/ratelimit waits for its first
// configuration before it serves; stop ends the client. It returns a nil
// stop and no error when ctx ends first.
func startXDS(ctx context.Context, o options, svc *rls.Service, log *slog.Logger) (stop func(), err error) {
	xc, err := newXDSClient(o, svc, log)
	if err != nil {
		return nil, config.UsageError{Err: err}
	}
	if o.xdsWait != nil {
		xc.wait = o.xdsWait
	}
	xctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); xc.run(xctx) }()
	stop = func() { cancel(); <-done }
	log.Info("admit rls: waiting for the first configuration from the xDS server", "xds_server", o.XDS.Server, "node_id", o.XDS.NodeID)
	select {
	case <-xc.loaded:
		return stop, nil
	case <-ctx.Done():
		stop()
		return nil, nil
	}
}

// openStore opens where, --store or --per-second-store, as the proxy opens
// its own store (package store), with a counter for the fixed windows
// beside the limiter of the token buckets (the per-second store's is not
// used); nil for memory, the service's own. The buckets' Redis keys
// (PREFIXrls.UNIT:{HASH}:gcra) stand beside the counters'
// (PREFIX{HASH}:WINDOW) under one prefix; --store-fail decides when either
// fails, so neither has a policy of its own.
func openStore(ctx context.Context, o options, where storeurl.Store, from string, mp metric.MeterProvider, log *slog.Logger) (*store.Shared, error) {
	return store.Open(ctx, store.Config{
		Front: "admit rls", From: from, Store: where, Table: o.StoreTable, Prefix: cmp.Or(o.StorePrefix, redisquota.DefaultCountPrefix),
		Migrate: true, Counter: true, MeterProvider: mp, Logger: log,
	})
}
