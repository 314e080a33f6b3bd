package server

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/admitgo/admit"
)

// Routes as the configuration gives them: from --route and the file,
// checked against the groups and against each other.

// addFlagRoute parses GROUP[,GROUP...]=PATTERN from --route; the route is
// checked against the groups and the other routes once the config file is
// read, since the file may name the groups.
func (c *config) addFlagRoute(v string) error {
	list, pattern, ok := strings.Cut(v, "=")
	if !ok || list == "" || pattern == "" {
		return errors.New("want GROUP=PATTERN")
	}
	r := route{Pattern: pattern, from: fmt.Sprintf("--route %q", v)}
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
func (c *config) addRoute(r route) error {
	if len(r.Groups) > maxStacked {
		return fmt.Errorf("%d groups, want at most %d", len(r.Groups), maxStacked)
	}
	for i, g := range r.Groups {
		if err := c.checkGroup(g); err != nil {
			return err
		}
		if slices.Contains(r.Groups[:i], g) {
			return fmt.Errorf("group %q is listed twice", g)
		}
	}
	if err := register(http.NewServeMux(), r.Pattern, http.NotFoundHandler()); err != nil {
		return patternError(r.Pattern, err)
	}
	if claimsGRPCHealth(r.Pattern) {
		return fmt.Errorf("claims the path of the gRPC health service (%s...), which admit serves itself", grpcHealthPath)
	}
	for _, earlier := range c.Routes {
		mux := http.NewServeMux()
		mux.Handle(earlier.Pattern, http.NotFoundHandler())
		if err := register(mux, r.Pattern, http.NotFoundHandler()); err != nil {
			return fmt.Errorf("conflicts with route %s: %s", earlier.named(r), conflict(err))
		}
		if !c.RouteFolding {
			continue
		}
		// The route table would refuse these too, but could name neither
		// route as written nor say where the file gives it.
		_, before := patternForms(earlier.Pattern)
		_, folded := patternForms(r.Pattern)
		mux = http.NewServeMux()
		mux.Handle(before, http.NotFoundHandler())
		if err := register(mux, folded, http.NotFoundHandler()); err != nil {
			why := "lower-cased, " + conflict(err)
			if before == folded {
				why = "lower-cased, both are " + folded
			}
			return fmt.Errorf("conflicts with route %s once case is folded, as upstreams that ignore case route them (%s); remove one of them, or set --route-folding=false", earlier.named(r), why)
		}
	}
	c.Routes = append(c.Routes, r)
	return nil
}

// named returns the route as an error about route r names it: as written,
// with its line when the config file gives it.
func (r route) named(about route) string {
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
	path := pattern
	if i := strings.IndexAny(path, " \t"); i >= 0 && !strings.Contains(path[:i], "/") {
		path = strings.TrimLeft(path[i:], " \t")
	}
	if i := strings.IndexByte(path, '/'); i > 0 {
		path = path[i:]
	}
	return strings.HasPrefix(path, grpcHealthPath) || path == strings.TrimSuffix(grpcHealthPath, "/")
}

// maxStacked is how many limits one route may stack, as the door allows.
const maxStacked = 8

// conflict keeps ServeMux's explanation of a conflict, which follows the
// line naming both patterns.
func conflict(err error) string {
	msg := err.Error()
	if _, why, ok := strings.Cut(msg, ":\n"); ok {
		msg = why
	}
	return msg
}

// register adds pattern to mux, turning ServeMux's panic into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// builtInGroups are the groups every configuration has.
var builtInGroups = []admit.Group{admit.GroupWebhook, admit.GroupLink, admit.GroupHealth}

// checkGroup refuses a group no route may join: one neither built in nor
// named under the config file's budgets.
func (c *config) checkGroup(g admit.Group) error {
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
