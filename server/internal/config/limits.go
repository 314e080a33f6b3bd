package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/storeurl"
)

// checkRoutes refuses, in the configuration's words, routes whose limits
// cannot work as written: a path key the pattern has no wildcard for, a
// cost above what a limit ever holds, and a route whose every limit is keyed
// by a value the client chooses. It resolves the budgets as the door will,
// so a default counts as a given value would. file names the config file in
// errors about its routes.
func (c *Config) checkRoutes(file string) error {
	door, err := c.Door()
	if err != nil {
		return c.BudgetsError(err)
	}
	defer door.Close()
	for _, r := range c.Routes {
		where := r.from
		if r.inFile {
			where = file + ": " + where
		}
		chosen := true
		for _, g := range r.Groups {
			b, _ := door.Budget(g)
			k := b.Key
			if name := k.PathValue; name != "" && !hasWildcard(r.Pattern, name) {
				return fmt.Errorf("admit: %s: group %q is keyed by path:%s, but pattern %q has no {%s} wildcard", where, g, name, r.Pattern, name)
			}
			if r.Spend() > b.Burst {
				holds := fmt.Sprintf("its burst is %d", b.Burst)
				if b.Algorithm == admit.FixedWindow {
					holds = fmt.Sprintf("its limit is %d", b.Limit)
				}
				return fmt.Errorf("admit: %s: cost %d is more than group %q ever admits (%s)", where, r.Spend(), g, holds)
			}
			// Once the client table is full, newcomers spend from the
			// shared bucket, so a cost above it would refuse them all. A
			// group on a shared store keeps neither, as long as the store
			// decides; an unlimited rate never asks the store.
			onStore := c.Store.Kind != storeurl.Memory && !(b.Algorithm == admit.TokenBucket && b.Rate == rate.Inf)
			if !onStore && r.Spend() > b.SharedBurst {
				return fmt.Errorf("admit: %s: cost %d is more than group %q admits from its shared bucket, which serves clients once its table is full (its shared_burst is %d)", where, r.Spend(), g, b.SharedBurst)
			}
			if onStore && c.StoreFail == quota.FailLocal {
				holds := b.Burst
				if b.Algorithm == admit.FixedWindow {
					holds = b.Limit
				}
				if share := max(1, holds/c.Replicas); r.Spend() > share {
					return fmt.Errorf("admit: %s: cost %d is more than group %q admits on one replica while the store is down (%d divided by --replicas %d is %d)", where, r.Spend(), g, holds, c.Replicas, share)
				}
				if share := max(1, b.SharedBurst/c.Replicas); r.Spend() > share {
					return fmt.Errorf("admit: %s: cost %d is more than group %q admits from its shared bucket on one replica while the store is down (shared_burst %d divided by --replicas %d is %d)", where, r.Spend(), g, b.SharedBurst, c.Replicas, share)
				}
			}
			chosen = chosen && (k.Header != "" || k.PathValue != "") && !k.Authenticated
		}
		if chosen {
			return fmt.Errorf("admit: %s: every limit of the route is keyed by a value the client chooses (%s), so a forger gets a fresh budget per value: stack a limit keyed by the peer, or set key_authenticated: true on a group whose value a layer in front of admit (a gateway, an authenticating proxy) checks first: a check in the app runs only after admit has admitted the request, so it needs the peer limit",
				where, c.keysOf(door, r))
		}
	}
	return nil
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
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		err = c.firstInFile(joined.Unwrap())
	}
	var fields interface {
		Group() admit.Group
		InWords(func(string) string) string
	}
	if errors.As(err, &fields) {
		return c.groupError(fields.Group(), fields.InWords(func(name string) string { return doorWords[name] }))
	}
	rest, ok := strings.CutPrefix(err.Error(), "admit: group ")
	quoted, qerr := strconv.QuotedPrefix(rest)
	if !ok || qerr != nil {
		return fmt.Errorf("admit: budgets: %w", err)
	}
	g, _ := strconv.Unquote(quoted)
	why := strings.TrimPrefix(rest[len(quoted):], ": ")
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Unwrap(e) != quota.ErrRule {
			continue
		}
		// quota's errors read "quota: invalid rule NAME: Field value, why".
		rule := strings.TrimPrefix(e.Error(), quota.ErrRule.Error()+" ")
		if name, err := strconv.QuotedPrefix(rule); err == nil {
			reason := strings.TrimPrefix(rule[len(name):], ": ")
			if reason != "" {
				reason = strings.ToLower(reason[:1]) + reason[1:]
			}
			why = strings.Replace(why, e.Error(), reason, 1)
		}
		break
	}
	return c.groupError(admit.Group(g), why)
}

// firstInFile returns the error, of one per group from the door, about the
// group the file gives first; groups the file does not give come after,
// in the door's order.
func (c *Config) firstInFile(errs []error) error {
	line := func(err error) int {
		if n, ok := c.budgetLines[groupOf(err)]; ok {
			return n
		}
		return math.MaxInt
	}
	return slices.MinFunc(errs, func(a, b error) int { return cmp.Compare(line(a), line(b)) })
}

// groupOf returns the group an error of the door names: "admit: group
// NAME: ..."; "" for none.
func groupOf(err error) admit.Group {
	var fields interface{ Group() admit.Group }
	if errors.As(err, &fields) {
		return fields.Group()
	}
	rest, _ := strings.CutPrefix(err.Error(), "admit: group ")
	quoted, qerr := strconv.QuotedPrefix(rest)
	if qerr != nil {
		return ""
	}
	g, _ := strconv.Unquote(quoted)
	return admit.Group(g)
}

// groupError is why, about group g, on the line of the file that gives g.
func (c *Config) groupError(g admit.Group, why string) error {
	line, ok := c.budgetLines[g]
	if !ok {
		return fmt.Errorf("admit: budgets: group %q: %s", g, why)
	}
	return fmt.Errorf("admit: %s: line %d: budgets.%s: %s", c.file, line, g, why)
}

// keysOf lists a route's keys, for errors.
func (c *Config) keysOf(door *admit.Door, r Route) string {
	var keys []string
	for _, g := range r.Groups {
		b, _ := door.Budget(g)
		keys = append(keys, string(g)+": "+KeyText(b.Key))
	}
	return strings.Join(keys, ", ")
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
