package server

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/health"
	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/routes"
)

// generation is what one reading of the configuration builds: the door
// with the budgets of its groups, and the handler tree of its routes. A
// reload builds the next generation and swaps it in for the last.
type generation struct {
	cfg   config.Config
	door  *admit.Door
	front *front
}

// build returns the generation of cfg. Without prev its door is new; with
// prev, it takes over prev's groups whose budget cfg leaves unchanged. The
// routes are tried on a door whose metrics go nowhere first, so that a
// configuration they refuse leaves prev as it was.
func (s *server) build(cfg config.Config, prev *admit.Door) (*generation, error) {
	dc := admit.Config{
		Budgets:       s.budgets(cfg),
		Shadow:        cfg.Shadow,
		Key:           s.resolver.Key,
		Now:           cfg.Now,
		Logger:        s.log,
		MeterProvider: s.tel.Provider,
		PolicyHeaders: cfg.PolicyHeaders,
	}
	// The hook keys a request on the door that decided it, which is set
	// once that door is made, before it serves.
	var door *admit.Door
	if s.access != nil {
		dc.Decided = s.access.hook(func() *admit.Door { return door })
		dc.Waited = s.access.waited()
	}
	if cfg.Auth {
		logged := dc.Decided
		dc.Decided = func(r *http.Request, g admit.Group, outcome string, status int) {
			tellAuth(r, outcome)
			if logged != nil {
				logged(r, g, outcome, status)
			}
		}
	}
	if prev != nil {
		trial := dc
		trial.MeterProvider, trial.Logger, trial.Decided, trial.Waited = noop.NewMeterProvider(), slog.New(slog.DiscardHandler), nil, nil
		door, err := admit.New(trial)
		if err != nil {
			return nil, usageError{Err: cfg.BudgetsError(err)}
		}
		_, err = s.routes(cfg, door)
		door.Close()
		if err != nil {
			return nil, err
		}
	}
	var err error
	if prev == nil {
		door, err = admit.New(dc)
	} else {
		door, err = prev.Reload(dc)
	}
	if err != nil {
		return nil, usageError{Err: cfg.BudgetsError(err)}
	}
	f, err := s.routes(cfg, door)
	if err != nil {
		door.Close()
		return nil, err
	}
	return &generation{cfg: cfg, door: door, front: f}, nil
}

// budgets returns the door's budgets for cfg: the config file's, field by
// field (the door fills the rest with each group's default), on the shared
// store when there is one.
func (s *server) budgets(cfg config.Config) map[admit.Group]admit.Budget {
	var charger quota.Charger
	if s.store != nil {
		charger = s.store.Charger
	}
	budgets := config.DoorBudgets(cfg, charger)
	if s.store != nil {
		for g, interval := range cfg.Async {
			b := budgets[g]
			b.Store = s.store.async(interval)
			budgets[g] = b
		}
	}
	return budgets
}

// routes puts every route behind the door, the gRPC health service in the
// health group, and the proxy, unlimited, for everything else, behind the
// front that canonicalises requests.
//
// Health routes are proxied to the upstream while the server runs, and
// answered from the health cache when they are over budget (which the door
// counts as cached) or the server is draining, so a drain shows at once.
func (s *server) routes(cfg config.Config, door *admit.Door) (*front, error) {
	proxy := s.proxy
	status := health.Handler(s.health)
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			status.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	})
	healthBudget, _ := door.Budget(admit.GroupHealth)
	_, grpc := grpchealth.NewHandler(s.health, grpcHealthOptions(healthBudget)...)
	return newFront(cfg, door, proxy, s.access, &s.malformed, func(r config.Route) (next, overflow http.Handler) {
		switch {
		case cfg.Auth:
			// The front answers a probe, not admit: over budget it is
			// refused like any other request.
			return admitted, nil
		case r.Pattern == config.GRPCHealthPattern:
			return grpc, grpc
		case cfg.IsProbe(r):
			return probe, status
		}
		return proxy, nil
	})
}

// newFront builds the front of cfg's routes on door: handlers says what
// each route admits its requests to, and what serves those over budget
// (nil: none); rest serves the requests no route matches.
func newFront(cfg config.Config, door *admit.Door, rest http.Handler, access *accessLog, malformed *malformedCounts, handlers func(config.Route) (next, overflow http.Handler)) (*front, error) {
	list := cfg.ServedRoutes()
	table, err := cfg.RouteTable(list)
	if err != nil {
		return nil, err
	}
	// In admit auth the front forwards method override headers whatever
	// admit says, so their methods are always matched.
	f := &front{table: table, rest: rest, canon: canon.Options{Slashes: cfg.EscapedSlashes, Allow: cfg.AllowSpellings}, overrides: cfg.MethodOverride || cfg.Auth,
		methods: cfg.Methods, malformed: malformed, access: access, door: door, matchedHost: namesAHost(cfg.Routes), exact: cfg.Auth}
	if f.methods == nil { // a configuration not parsed: the default
		f.methods = strings.Split(config.DefaultMethods, ",")
	}
	for _, r := range list {
		next, overflow := handlers(r)
		// The proxy reads a body before it takes the group's slot; admit
		// auth sees none and forwards none.
		rt := admit.Route{Groups: r.Groups, Cost: r.Cost, Overflow: overflow, Buffer: !cfg.Auth}
		h, err := door.Handler(rt, next)
		if err != nil {
			return nil, usageError{Err: fmt.Errorf("admit: route %s: %w", r, err)}
		}
		f.handlers = append(f.handlers, h)
		fr := frontRoute{r: r, rt: rt, next: next}
		for _, g := range r.Groups {
			if b, _ := door.Budget(g); b.Key.PathValue != "" && !slices.Contains(fr.pathKeys, b.Key.PathValue) {
				fr.pathKeys = append(fr.pathKeys, b.Key.PathValue)
			}
		}
		f.routes = append(f.routes, fr)
	}
	return f, nil
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

// logRoutes logs what is protected: one line per route, with its pattern
// and each of its limits' budget, and a warning when no route is
// configured, since every request then passes through unlimited.
func logRoutes(log *slog.Logger, cfg config.Config, door *admit.Door) {
	if len(cfg.Routes) == 0 {
		log.Warn("admit: no route is configured, so every request passes through unlimited: add routes with --route or the config file's routes")
	}
	for _, r := range cfg.ServedRoutes() {
		names := make([]string, len(r.Groups))
		for i, g := range r.Groups {
			names[i] = string(g)
		}
		log.Info("admit: route", config.FieldPattern, r.Pattern, "groups", strings.Join(names, ","), "limits", routeLimits(door, r))
	}
}

// namesAHost reports whether a route's pattern names a host.
func namesAHost(list []config.Route) bool {
	for _, r := range list {
		if routes.Host(r.Pattern) != "" {
			return true
		}
	}
	return false
}
