package server

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/server/storeurl"
)

// errVersion ends parsing after --version has been answered.
var errVersion = errors.New("version printed")

// version returns what admit --version prints: the module version (the tag
// go install fetched, or for a build from a checkout the pseudo-version Go
// stamps from its commit), the revision and its time when the build
// recorded them, and the Go version. A build from a source tree that
// records no revision says so, since its version then names no source.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "admit (unknown version)"
	}
	// Embedded in another program, admit is one of its dependencies, and
	// the build's revision is that program's.
	for _, d := range info.Deps {
		if d.Path == "github.com/admitgo/admit" && info.Main.Path != d.Path {
			return "admit " + d.Version + " (in " + info.Main.Path + ") " + info.GoVersion
		}
	}
	v := "admit " + info.Main.Version
	var rev, when, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	switch {
	case rev != "":
		v += fmt.Sprintf(" (revision %s, %s%s)", rev, when, modified)
	case info.Main.Version == "" || info.Main.Version == "(devel)":
		v += " (revision unknown: built without version control information)"
	}
	return v + " " + info.GoVersion
}

// validateOptions are validate's own flags, beside the server's.
var validateOptions = []option{
	{name: "allow-no-routes", def: "false", noEnv: true, usage: "succeed even when no route is configured (the server then limits nothing)",
		set: func(c *config, v string) (err error) { c.allowNoRoutes, err = parseBool(v); return err }},
}

// validate is the validate subcommand: it checks everything startup checks
// that needs no network, prints the effective routes and budgets, and fails
// on a configuration that limits nothing unless --allow-no-routes.
func validate(args []string, getenv func(string) string, out io.Writer) error {
	c, err := parseConfigWith("admit validate", slices.Concat(options, validateOptions), args, getenv, out, printValidateUsage)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, errVersion) {
		return nil
	}
	if err != nil {
		return usageError{err}
	}
	if err := c.checkOffline(); err != nil {
		return usageError{err}
	}
	st, closeStore, err := c.offlineStore()
	if err != nil {
		return usageError{err}
	}
	defer closeStore()
	door, err := c.doorOn(st)
	if err != nil {
		return usageError{c.budgetsError(err)} // as startup words it
	}
	defer door.Close()
	printEffective(out, c, door)
	if len(c.Routes) == 0 && !c.allowNoRoutes {
		return usageError{errors.New("admit validate: no route is configured, so admit would limit nothing: add routes, or pass --allow-no-routes")}
	}
	printUnchecked(out, c)
	fmt.Fprintln(out, "ok")
	return nil
}

// printUnchecked writes what validate leaves to startup, since it connects
// to nothing, so that its ok is not read as more than it is.
func printUnchecked(w io.Writer, c config) {
	const offline = "(validate connects to nothing)"
	switch {
	case c.Upstream != nil:
		fmt.Fprintf(w, "unchecked  upstream %s: whether it answers %s\n", c.Upstream.Redacted(), offline)
	case !c.Demo:
		fmt.Fprintf(w, "unchecked  upstream: none is given, and the server needs --upstream (%s) unless --demo\n", envName("upstream"))
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
	printOptions(w, validateOptions)
	printOptions(w, options)
}

// printEffective writes every route with its limits, then every group's
// budget, resolved as the door resolves it.
func printEffective(w io.Writer, c config, door *admit.Door) {
	for _, r := range withGRPCHealth(c.Routes) {
		fmt.Fprintf(w, "route  %s: %s\n", r.spec(), routeLimits(door, r))
	}
	for _, g := range door.Groups() {
		fmt.Fprintf(w, "group  %s: %s\n", g, budgetText(c.view(door, g)))
	}
}

// routeLimits describes a route's limits for people.
func routeLimits(door *admit.Door, r route) string {
	var parts []string
	for _, g := range r.Groups {
		b, _ := door.Budget(g)
		parts = append(parts, fmt.Sprintf("%s (%s, key %s)", g, amountText(b), keyText(b.Key)))
	}
	s := strings.Join(parts, ", then ")
	if r.cost() > 1 {
		s += fmt.Sprintf(", cost %d", r.cost())
	}
	return s
}

// amountText is a budget's algorithm and amounts, as the config spells them.
func amountText(b admit.Budget) string {
	switch {
	case b.Algorithm == admit.FixedWindow:
		return fmt.Sprintf("%s limit %d per %s", fixedWindow, b.Limit, durationText(b.Window))
	case b.Rate == rate.Inf:
		return tokenBucket + " without a rate limit"
	}
	return fmt.Sprintf("%s rate %s/s, burst %d", tokenBucket, rateText(b.Rate), b.Burst)
}

// rateText is a rate as the config file spells it: .inf for no limit.
func rateText(r rate.Limit) string {
	if r == rate.Inf {
		return ".inf"
	}
	return strconv.FormatFloat(float64(r), 'g', -1, 64)
}

// durationText is a duration as the config file would spell it: 1h rather
// than time.Duration's 1h0m0s, and 0 for none.
func durationText(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// schema is the schema subcommand: it prints the SQL of the PostgreSQL
// store's table, for an operator who creates it with another role.
func schema(args []string, getenv func(string) string, out io.Writer) error {
	set := newOptionSet("admit schema", pick(options, "store-table"))
	if err := set.parse("admit schema", args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(out, "Usage: admit schema [--store-table TABLE]\n\nschema prints the SQL that creates the PostgreSQL store's table and index.\n\n")
			printOptions(out, set.options)
			return nil
		}
		return usageError{err}
	}
	if set.fs.NArg() > 0 {
		return usageError{set.unexpected(args, set.fs.Args())}
	}
	var c config
	if err := set.apply(getenv, &c); err != nil {
		return usageError{err}
	}
	sql, err := pgquota.Schema(c.StoreTable)
	if err != nil {
		from, _ := set.from("store-table")
		return usageError{fmt.Errorf("admit schema: %s %q: %w", from, c.StoreTable, err)}
	}
	fmt.Fprint(out, sql)
	return nil
}

// checkOffline runs the checks of startup that need no network: that the
// certificate loads, that the store's URL and table or prefix are ones its
// driver takes, and that the routes fit together with the gRPC health
// service, folded as the server folds them. Its errors are the
// configuration's, so the process exits 2 on them.
func (c config) checkOffline() error {
	if c.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
			return fmt.Errorf("admit: --tls-cert %q, --tls-key %q: %w", c.TLSCert, c.TLSKey, err)
		}
	}
	if err := c.Store.Check(); err != nil {
		return storeURLError(c.Store.URL, err)
	}
	if c.Store.Kind == storeurl.Postgres {
		if _, err := pgquota.Schema(c.StoreTable); err != nil {
			return fmt.Errorf("admit: --store-table %q: %w", c.StoreTable, err)
		}
	}
	_, err := c.routeTable(withGRPCHealth(c.Routes))
	return err
}

// offlineStore returns the store --store names, built as startup builds it
// but unable to reach its server, for the checks a store makes of its rules
// before any call; nil for the memory store. Validate must never connect:
// it runs where the store may be unreachable, or must not be touched.
func (c config) offlineStore() (quota.Charger, func(), error) {
	quiet := slog.New(slog.DiscardHandler)
	switch c.Store.Kind {
	case storeurl.Redis:
		st, err := redisquota.New(storeurl.Offline{}, redisquota.Config{Prefix: c.StorePrefix, MeterProvider: noop.NewMeterProvider()})
		if err != nil {
			return nil, nil, fmt.Errorf("admit: --store-prefix %q: %w", c.StorePrefix, err)
		}
		return st, func() { st.Close() }, nil
	case storeurl.Postgres:
		pool, err := storeurl.OfflinePool(c.Store.URL)
		if err != nil {
			return nil, nil, storeURLError(c.Store.URL, err)
		}
		st, err := pgquota.New(pool, pgquota.Config{Table: c.StoreTable, MeterProvider: noop.NewMeterProvider(), Logger: quiet})
		if err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("admit: --store-table %q: %w", c.StoreTable, err)
		}
		return st, func() { st.Close(); pool.Close() }, nil
	}
	return nil, func() {}, nil
}

// storeURLError names a store URL its driver refuses, without its
// password; storeurl's errors never repeat the URL.
func storeURLError(u string, err error) error {
	return fmt.Errorf("admit: --store %q: %w", storeurl.Redact(u), err)
}
