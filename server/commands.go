package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// validateOptions are validate's own flags, beside the server's.
var validateOptions = []config.Option{
	{Name: "allow-no-routes", Def: "false", NoEnv: true, Usage: "succeed even when no route is configured (the server then limits nothing)",
		Set: func(c *config.Config, v string) (err error) { c.AllowNoRoutes, err = config.ParseBool(v); return err }},
}

// validate is the validate subcommand: it checks everything startup checks
// that needs no network, prints the effective routes and budgets, and fails
// on a configuration that limits nothing unless --allow-no-routes.
func validate(args []string, getenv func(string) string, out io.Writer) error {
	c, err := config.ParseWith("admit validate", slices.Concat(config.Options, validateOptions), args, getenv, out, printValidateUsage)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, config.ErrVersion) {
		return nil
	}
	if err != nil {
		return usageError{Err: err}
	}
	if err := checked(c, out); err != nil {
		return err
	}
	fmt.Fprintln(out, "ok")
	return nil
}

// checked checks c as startup does without the network, and prints the
// effective routes and budgets and what it left unchecked; validate's
// body, for the proxy and admit auth alike.
func checked(c config.Config, out io.Writer) error {
	if err := c.CheckOffline(); err != nil {
		return usageError{Err: err}
	}
	if err := checkPassHeaders(c.PassHeaders); err != nil {
		return usageError{Err: err}
	}
	st, closeStore, err := c.OfflineStore()
	if err != nil {
		return usageError{Err: err}
	}
	defer closeStore()
	door, err := c.DoorOn(st)
	if err != nil {
		return usageError{Err: c.BudgetsError(err)} // as startup words it
	}
	defer door.Close()
	printEffective(out, c, door)
	if len(c.Routes) == 0 && !c.AllowNoRoutes {
		return usageError{Err: errors.New("admit validate: no route is configured, so admit would limit nothing: add routes, or pass --allow-no-routes")}
	}
	printUnchecked(out, c)
	return nil
}

// printUnchecked writes what validate leaves to startup, since it connects
// to nothing, so that its ok is not read as more than it is.
func printUnchecked(w io.Writer, c config.Config) {
	const offline = "(validate connects to nothing)"
	switch {
	case c.Auth:
	case c.Upstream != nil:
		fmt.Fprintf(w, "unchecked  upstream %s: whether it answers %s\n", c.Upstream.Redacted(), offline)
	case !c.Demo:
		fmt.Fprintf(w, "unchecked  upstream: none is given, and the server needs --upstream (%s) unless --demo\n", config.EnvName("upstream"))
	}
	switch c.Store.Kind {
	case storeurl.Redis:
		fmt.Fprintf(w, "unchecked  store %s: whether it answers %s\n", storeurl.Redact(c.Store.URL), offline)
	case storeurl.Postgres:
		table := c.StoreTable
		if table == "" {
			table = pgquota.DefaultTable
		}
		exists := "exists"
		if c.StoreMigrate {
			exists = "exists or admit may create it"
		}
		fmt.Fprintf(w, "unchecked  store %s: whether it answers, and whether table %s %s %s\n", storeurl.Redact(c.Store.URL), table, exists, offline)
	}
}

func printValidateUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: admit validate [flags]\n\n"+
		"validate checks the configuration as startup does, without listening or\n"+
		"connecting anywhere, and prints the routes and budgets it would enforce,\n"+
		"then what it left unchecked. It takes the server's flags and environment\n"+
		"variables, and needs no --upstream.\n\n")
	config.PrintOptions(w, validateOptions)
	config.PrintOptions(w, config.Options)
}

// printEffective writes every route with its limits, then every group's
// budget, resolved as the door resolves it.
func printEffective(w io.Writer, c config.Config, door *admit.Door) {
	for _, r := range c.ServedRoutes() {
		fmt.Fprintf(w, "route  %s: %s\n", r.Spec(), routeLimits(door, r))
	}
	for _, g := range door.Groups() {
		fmt.Fprintf(w, "group  %s: %s\n", g, config.BudgetText(c.View(door, g)))
	}
}

// routeLimits describes a route's limits for people.
func routeLimits(door *admit.Door, r config.Route) string {
	var parts []string
	for _, g := range r.Groups {
		b, _ := door.Budget(g)
		parts = append(parts, fmt.Sprintf("%s (%s, key %s)", g, amountText(b), config.KeyText(b.Key)))
	}
	s := strings.Join(parts, ", then ")
	if r.Spend() > 1 {
		s += fmt.Sprintf(", cost %d", r.Spend())
	}
	return s
}

// amountText is a budget's algorithm and amounts, as the config spells them.
func amountText(b admit.Budget) string {
	switch {
	case b.Algorithm == admit.FixedWindow:
		return fmt.Sprintf("%s limit %d per %s", config.AlgorithmText(b.Algorithm), b.Limit, config.DurationText(b.Window))
	case b.Rate == rate.Inf:
		return config.AlgorithmText(b.Algorithm) + " without a rate limit"
	}
	return fmt.Sprintf("%s rate %s, burst %d", config.AlgorithmText(b.Algorithm), config.RateSummary(b.Rate), b.Burst)
}

// schema is the schema subcommand: it prints the SQL of the PostgreSQL
// store's table, for an operator who creates it with another role.
func schema(args []string, getenv func(string) string, out io.Writer) error {
	set := config.NewOptionSet("admit schema", config.Pick(config.Options, "store-table"))
	if err := set.Parse("admit schema", args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(out, "Usage: admit schema [--store-table TABLE]\n\nschema prints the SQL that creates the PostgreSQL store's table and index.\n\n")
			config.PrintOptions(out, set.List)
			return nil
		}
		return usageError{Err: err}
	}
	if set.FS.NArg() > 0 {
		return usageError{Err: set.Unexpected(args, set.FS.Args())}
	}
	var c config.Config
	if err := set.Apply(getenv, &c); err != nil {
		return usageError{Err: err}
	}
	sql, err := pgquota.Schema(c.StoreTable)
	if err != nil {
		from, _ := set.From("store-table")
		return usageError{Err: fmt.Errorf("admit schema: %s %q: %w", from, c.StoreTable, err)}
	}
	fmt.Fprint(out, sql)
	return nil
}
