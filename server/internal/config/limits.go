package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/quota"
)

// checkRoutes refuses, in the configuration's words, routes whose limits
// cannot work as written. The door checks each route as the server will
// put it, on a door of the configuration's budgets on the store --store
// names (built offline, so nothing connects) with its fallback under
// --store-fail local: a cost above what a limit ever holds, above its
// shared bucket or a replica's share, and a route whose every limit is
// keyed by a value the client chooses. Only the check of a path key
// against the route's pattern is the server's own, since the door knows no
// patterns. file names the config file in errors about its routes.
func (c *Config) checkRoutes(file string) error {
	st, closeStore, err := c.OfflineStore()
	if err != nil {
		return err
	}
	defer closeStore()
	door, err := c.DoorOn(st)
	if err != nil {
		return c.BudgetsError(err)
	}
	defer door.Close()
	for _, r := range c.Routes {
		where := r.from
		if r.inFile {
			where = file + ": " + where
		}
		for _, g := range r.Groups {
			b, _ := door.Budget(g)
			if name := b.Key.PathValue; name != "" && !hasWildcard(r.Pattern, name) {
				return fmt.Errorf("admit: %s: group %q is keyed by path:%s, but pattern %q has no {%s} wildcard", where, g, name, r.Pattern, name)
			}
		}
		_, err := door.Handler(admit.Route{Groups: r.Groups, Cost: r.Cost}, http.NotFoundHandler())
		var refused *admit.BudgetError
		switch {
		case errors.As(err, &refused):
			return fmt.Errorf("admit: %s: %s", where, refused.InWords(fileWords(door, refused)))
		case err != nil:
			return fmt.Errorf("admit: %s: %w", where, err)
		}
	}
	return nil
}

// fileWords names the door's fields and values in a refusal as the file
// and the flags spell them (doorWords), and a route's keys as the file
// gives them.
func fileWords(door *admit.Door, e *admit.BudgetError) func(string) string {
	return func(name string) string {
		if name == "ChosenKeys" {
			var keys []string
			for _, g := range e.Route {
				b, _ := door.Budget(g)
				keys = append(keys, string(g)+": "+KeyText(b.Key))
			}
			return strings.Join(keys, ", ")
		}
		return doorWords[name]
	}
}

// Door returns a door with the configuration's budgets, resolved as the
// server's, whose metrics and logs go nowhere: for checks and for printing
// what the server would enforce.
func (c *Config) Door() (*admit.Door, error) { return c.DoorOn(nil) }

// DoorOn is door with every group on the shared store st, as the server
// puts them, so that the door refuses what only a store refuses; nil: the
// door's own buckets.
func (c *Config) DoorOn(st quota.Charger) (*admit.Door, error) {
	return admit.New(admit.Config{Budgets: DoorBudgets(*c, st), MeterProvider: noop.NewMeterProvider(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// BudgetsError is err, from a door of the configuration's budgets, in the
// config file's terms: a group the file gives is named by its field and
// line, and a rule a store refuses by the store's reason alone, without
// the rule's name, which the door makes up. An error about no group keeps
// its words.
func (c *Config) BudgetsError(err error) error {
	// New joins one error per group refused (errors.Join): report the
	// group the file gives first.
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		err = c.firstInFile(joined.Unwrap())
	}
	var refused *admit.BudgetError
	if !errors.As(err, &refused) {
		return fmt.Errorf("admit: budgets: %w", err)
	}
	why := refused.InWords(func(name string) string { return doorWords[name] })
	var rule *quota.RuleError
	switch store := refused.Unwrap(); {
	case errors.As(store, &rule) && rule.Reason != "":
		// The store names its rule's field as Go does ("Window 500µs");
		// the file spells the same key in lower case.
		why += ": " + strings.ToLower(rule.Reason[:1]) + rule.Reason[1:]
	case store != nil:
		why += ": " + store.Error()
	}
	return c.groupError(refused.Group, why)
}

// firstInFile returns the error, of one per group from the door, about the
// group the file gives first; groups the file does not give come after,
// in the door's order.
func (c *Config) firstInFile(errs []error) error {
	line := func(err error) int {
		var refused *admit.BudgetError
		if !errors.As(err, &refused) {
			return math.MaxInt
		}
		if n, ok := c.budgetLines[refused.Group]; ok {
			return n
		}
		return math.MaxInt
	}
	return slices.MinFunc(errs, func(a, b error) int { return cmp.Compare(line(a), line(b)) })
}

// groupError is why, about group g, on the line of the file that gives g.
func (c *Config) groupError(g admit.Group, why string) error {
	line, ok := c.budgetLines[g]
	if !ok {
		return fmt.Errorf("admit: budgets: group %q: %s", g, why)
	}
	return fmt.Errorf("admit: %s: line %d: budgets.%s: %s", c.file, line, g, why)
}

// hasWildcard reports whether pattern has a wildcard named name.
func hasWildcard(pattern, name string) bool {
	return strings.Contains(pattern, "{"+name+"}") || strings.Contains(pattern, "{"+name+"...}")
}

// DoorBudgets returns the budgets a door enforces for cfg: every built-in
// group and the file's, each decided on charger when it is not nil (a
// shared store), with its local fallback under --store-fail local.
// validate and explain call it with the store OfflineStore builds, which
// never connects, so that routes are checked as the server checks them.
func DoorBudgets(cfg Config, charger quota.Charger) map[admit.Group]admit.Budget {
	budgets := make(map[admit.Group]admit.Budget)
	for _, g := range builtInGroups {
		budgets[g] = admit.Budget{}
	}
	maps.Copy(budgets, cfg.Budgets)
	if cfg.Auth {
		for g, b := range budgets {
			budgets[g] = authBudget(b)
		}
	}
	if charger != nil {
		for g, b := range budgets {
			b.Store, b.Failure = charger, cfg.StoreFail
			if cfg.StoreFail == quota.FailLocal {
				b.Replicas = cfg.Replicas
			}
			budgets[g] = b
		}
	}
	return budgets
}
