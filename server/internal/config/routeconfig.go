package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"connectrpc.com/grpchealth"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/routes"
)

// Routes as the configuration gives them: from --route and the file,
// checked against the groups and against each other.

// addFlagRoute parses GROUP[,GROUP...]=PATTERN from --route; the route is
// checked against the groups and the other routes once the config file is
// read, since the file may name the groups.
func (c *Config) addFlagRoute(v string) error {
	list, pattern, ok := strings.Cut(v, "=")
	if !ok || list == "" || pattern == "" {
		return errors.New("want GROUP=PATTERN")
	}
	r := Route{Pattern: pattern, from: fmt.Sprintf("--route %q", v)}
	for _, g := range strings.Split(list, ",") {
		if g = strings.TrimSpace(g); g == "" {
			return errors.New("want GROUP=PATTERN, or GROUP,GROUP=PATTERN")
		}
		r.Groups = append(r.Groups, admit.Group(g))
	}
	c.flagRoutes = append(c.flagRoutes, r)
	return nil
}

// addRoute checks a route against the groups, ServeMux's pattern syntax and
// the routes before it. Conflicts are checked pair by pair, which is how
// ServeMux finds them, so that the message can name the earlier route.
func (c *Config) addRoute(r Route) error {
	if len(r.Groups) > MaxStacked {
		return fmt.Errorf("%d groups, want at most %d", len(r.Groups), MaxStacked)
	}
	for i, g := range r.Groups {
		if err := c.checkGroup(g); err != nil {
			return err
		}
		if slices.Contains(r.Groups[:i], g) {
			return fmt.Errorf("group %q is listed twice", g)
		}
	}
	if err := routes.Check(r.Pattern); err != nil {
		return err
	}
	if claimsGRPCHealth(r.Pattern) {
		return fmt.Errorf("claims the path of the gRPC health service (%s...), which admit serves itself", GRPCHealthPath)
	}
	for _, earlier := range c.Routes {
		if why, ok := routes.Conflict(earlier.Pattern, r.Pattern); ok {
			return fmt.Errorf("conflicts with route %s: %s", earlier.named(r), why)
		}
		if !c.RouteFolding {
			continue
		}
		// The route table would refuse these too, but could name neither
		// route as written nor say where the file gives it.
		if why, ok := routes.FoldedConflict(earlier.Pattern, r.Pattern); ok {
			return fmt.Errorf("conflicts with route %s once case is folded, as upstreams that ignore case route them (%s); remove one of them, or set --route-folding=false", earlier.named(r), why)
		}
	}
	c.Routes = append(c.Routes, r)
	return nil
}

// named returns the route as an error about route r names it: as written,
// with its line when the config file gives it.
func (r Route) named(about Route) string {
	switch {
	case !r.inFile:
		return r.String()
	case about.inFile:
		return fmt.Sprintf("%s (%s)", r, r.from)
	}
	return fmt.Sprintf("%s (%s of the config file)", r, r.from)
}

// claimsGRPCHealth reports a pattern that names the gRPC health service's
// path, under any method or host. Broader patterns ("/", "/{x...}") leave it
// alone: the service's own route is more specific.
func claimsGRPCHealth(pattern string) bool {
	_, _, path := routes.Split(pattern)
	return strings.HasPrefix(path, GRPCHealthPath) || path == strings.TrimSuffix(GRPCHealthPath, "/")
}

// MaxStacked is how many limits one route of the configuration may stack:
// as many as the door admits under without allocating. A request matching
// several routes is limited by all of theirs (see the server's combined).
const MaxStacked = 8

// matching returns how the configuration's table of list matches.
func (c *Config) matching(list []Route) routes.Matching {
	m := routes.Matching{Fold: c.RouteFolding, Profile: c.UpstreamProfile, Allow: c.AllowSpellings, Slashes: c.EscapedSlashes}
	for i, r := range list {
		if r.StrictMethods {
			if m.Strict == nil {
				m.Strict = make([]bool, len(list))
			}
			m.Strict[i] = true
		}
	}
	return m
}

// RouteTable returns the table of list, a configuration's routes.
func (c *Config) RouteTable(list []Route) (*routes.Table, error) {
	patterns := make([]string, len(list))
	for i, r := range list {
		patterns[i] = r.Pattern
	}
	t, err := routes.New(patterns, c.matching(list))
	var conflict *routes.ConflictError
	switch {
	case errors.As(err, &conflict) && conflict.Folded:
		return nil, fmt.Errorf("admit: route %s conflicts with an earlier route once case is folded, as upstreams that ignore case route them (%s); remove one of them, or set --route-folding=false", list[conflict.Route], conflict.Why)
	case errors.As(err, &conflict):
		return nil, fmt.Errorf("admit: route %s: %s", list[conflict.Route], conflict.Why)
	case err != nil:
		return nil, fmt.Errorf("admit: %w", err)
	}
	return t, nil
}

// builtInGroups are the groups every configuration has.
var builtInGroups = []admit.Group{admit.GroupWebhook, admit.GroupLink, admit.GroupHealth}

// checkGroup refuses a group no route may join: one neither built in nor
// named under the config file's budgets.
func (c *Config) checkGroup(g admit.Group) error {
	if slices.Contains(builtInGroups, g) {
		return nil
	}
	if _, ok := c.Budgets[g]; ok {
		return nil
	}
	known := slices.Concat(builtInGroups, slices.Sorted(maps.Keys(c.Budgets)))
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = string(k)
	}
	return fmt.Errorf("unknown group %q (want %s, or a group the config file's budgets name)", g, strings.Join(names, ", "))
}

// GRPCHealthPattern is where the gRPC health service is served: gRPC and
// Connect calls are POSTs to /grpc.health.v1.Health/METHOD.
const (
	GRPCHealthPath    = "/" + grpchealth.HealthV1ServiceName + "/"
	GRPCHealthPattern = "POST " + GRPCHealthPath
)

// WithGRPCHealth returns routes with the gRPC health service's route, in the
// health group, after them.
func WithGRPCHealth(routes []Route) []Route {
	return append(slices.Clip(routes), Route{Groups: []admit.Group{admit.GroupHealth}, Pattern: GRPCHealthPattern,
		from: "the gRPC health service"})
}

// ServedRoutes returns the routes c limits: its own, and after them the
// gRPC health service's, which the proxy serves itself. admit auth serves
// no health service to the front's clients, so there the path is the
// app's, and no route of admit's.
func (c *Config) ServedRoutes() []Route {
	if c.Auth {
		return slices.Clip(c.Routes)
	}
	return WithGRPCHealth(c.Routes)
}

// IsProbe reports a route of health probes: one with a group that is, or is
// like, the health group. Its over-budget probes are answered from the
// health cache, never refused.
func (c *Config) IsProbe(r Route) bool {
	for _, g := range r.Groups {
		if g == admit.GroupHealth || c.Likes[g] == admit.GroupHealth {
			return true
		}
	}
	return false
}
