package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/cmd/admit/internal/canon"
)

// groups are the groups a route may join, as the door names them.
var groups = []admit.Group{admit.GroupWebhook, admit.GroupLink, admit.GroupHealth}

// demoRoutes are the routes of --demo when neither flags nor the config file
// give any.
var demoRoutes = []route{
	{admit.GroupWebhook, "POST /hooks/{name}"},
	{admit.GroupLink, "GET /l/{id}"},
	{admit.GroupHealth, "GET /healthz"},
}

// demoHealthPath is the demo upstream's health endpoint, probed when --demo
// runs without --upstream.
const demoHealthPath = "/healthz"

// config is the server's configuration, read from flags, the environment and
// the optional config file, and checked: every field holds a usable value.
type config struct {
	Listen                 string                         // address of the proxy, host:port
	Upstream               *url.URL                       // nil only with Demo: the built-in demo upstream
	UpstreamHealth         string                         // path of the upstream's health endpoint; empty: none
	Demo                   bool                           // demo routes (unless Routes are given) and, without Upstream, a demo upstream
	Routes                 []route                        // the config file's routes, then those of --route
	TrustedProxies         []netip.Prefix                 // peers whose forwarding headers are believed; never /0
	ProxyProtocolFrom      []netip.Prefix                 // peers that must send a PROXY protocol header
	DisableAnonRouteLimits bool                           // shadow mode: count would_* outcomes, reject nothing
	PolicyHeaders          bool                           // send RateLimit-Policy and RateLimit fields
	EscapedSlashes         canon.Slashes                  // what to do with %2F, %5C and \ in paths
	RouteFolding           bool                           // also match lower-cased paths and a toggled trailing slash
	MethodOverride         bool                           // forward method override headers and match their methods
	Store                  store                          // where per-client tokens are decided
	StorePrefix            string                         // Redis key prefix; empty: the store's default
	StoreTable             string                         // PostgreSQL table, may be schema-qualified; empty: the store's default
	StoreMigrate           bool                           // create the PostgreSQL table at startup when missing
	StoreFailOpen          bool                           // admit when the store cannot decide (default: refuse)
	MaxConns               int                            // open connections on the proxy's listener; at least 1
	MaxConnsPerClient      int                            // open connections per client key; 0: no cap
	MetricsListen          string                         // address of /metrics, host:port
	TLSCert, TLSKey        string                         // both set or both empty
	DrainDelay             time.Duration                  // how long health reports draining before the listener closes
	DrainTimeout           time.Duration                  // how long in-flight requests may run after SIGTERM; > 0
	LogFormat              string                         // "text" or "json"
	LogLevel               slog.Level                     // the least severe level logged
	ConfigFile             string                         // the YAML file read, if any
	Budgets                map[admit.Group]budgetOverride // per group; nil when the file overrides none

	// Not settings: tests and benchmarks set them.
	Now       func() time.Time  // the door's clock; nil: time.Now
	Transport http.RoundTripper // to the upstream; nil: upstream.Transport()
}

// route puts requests matching a ServeMux pattern into a group.
type route struct {
	Group   admit.Group
	Pattern string
}

type storeKind string

const (
	storeMemory   storeKind = "memory"
	storePostgres storeKind = "postgres"
	storeRedis    storeKind = "redis"
)

// store is where token decisions are made. URL is the connection string as
// given (it may hold a password: print it only through redactURL).
type store struct {
	Kind storeKind
	URL  string // empty for memory
}

// setting is one flag with its environment fallback. Values are kept as
// given and parsed after the flags, so the flag, the variable and the default
// all go through apply and errors can name where a value came from.
type setting struct {
	name  string // flag name, without dashes
	env   string // environment variable; empty: none
	def   string // default, parsed like any value; empty: none
	arg   string // placeholder in usage; empty for booleans
	multi bool   // repeatable; each value is applied in turn
	usage string
	apply func(c *config, v string) error
}

var settings = []setting{
	{"listen", "ADMIT_LISTEN", ":8080", "ADDR", false, "address of the proxy; port 0 picks a free port",
		func(c *config, v string) (err error) { c.Listen, err = parseAddr(v); return err }},
	{"upstream", "ADMIT_UPSTREAM", "", "URL", false, "the app to proxy to; required unless --demo",
		func(c *config, v string) (err error) { c.Upstream, err = parseUpstream(v); return err }},
	{"upstream-health", "ADMIT_UPSTREAM_HEALTH", "", "PATH", false, "path of the upstream's health endpoint, probed at most once a second for health answers admit gives itself; without it admit answers serving while it runs",
		func(c *config, v string) (err error) { c.UpstreamHealth, err = parsePath(v); return err }},
	{"demo", "ADMIT_DEMO", "false", "", false, "demo routes and, without --upstream, a built-in demo upstream",
		func(c *config, v string) (err error) { c.Demo, err = parseBool(v); return err }},
	{"route", "", "", "GROUP=PATTERN", true, "put requests matching a ServeMux pattern into a group: webhook, link or health; repeatable; with --demo and no routes, the demo routes",
		func(c *config, v string) error { return c.addRoute(v) }},
	{"trusted-proxy", "ADMIT_TRUSTED_PROXIES", "", "CIDRS", true, "proxies whose forwarding headers are believed: CIDRs or addresses, comma or space separated; repeatable; /0 refused",
		func(c *config, v string) error { return appendPrefixes(&c.TrustedProxies, v) }},
	{"proxy-protocol-from", "ADMIT_PROXY_PROTOCOL_FROM", "", "CIDRS", true, "peers that must send a PROXY protocol header: CIDRs or addresses, comma or space separated; repeatable",
		func(c *config, v string) error { return appendPrefixes(&c.ProxyProtocolFrom, v) }},
	{"disable-anon-route-limits", "ADMIT_DISABLE_ANON_ROUTE_LIMITS", "false", "", false, "shadow mode: reject nothing, count what would have been rejected",
		func(c *config, v string) (err error) { c.DisableAnonRouteLimits, err = parseBool(v); return err }},
	{"policy-headers", "ADMIT_POLICY_HEADERS", "false", "", false, "send the IETF draft RateLimit-Policy and RateLimit fields on the groups' answers",
		func(c *config, v string) (err error) { c.PolicyHeaders, err = parseBool(v); return err }},
	{"escaped-slashes", "ADMIT_ESCAPED_SLASHES", "reject", "POLICY", false, "paths with an encoded slash or backslash (%2F, %5C) or a backslash: reject (400), decode (into /, and forward decoded) or keep (forward as they are; only for upstreams that never decode them)",
		func(c *config, v string) (err error) { c.EscapedSlashes, err = canon.ParseSlashes(v); return err }},
	{"route-folding", "ADMIT_ROUTE_FOLDING", "true", "", false, "limit a request whose lower-cased path, or path with a trailing slash added or removed, matches a limited route, as upstreams that ignore case or trailing slashes route it; false for upstreams that route exactly",
		func(c *config, v string) (err error) { c.RouteFolding, err = parseBool(v); return err }},
	{"method-override", "ADMIT_METHOD_OVERRIDE", "false", "", false, "forward X-HTTP-Method-Override, X-HTTP-Method and X-Method-Override, and limit a request as each method they name too; by default they are removed",
		func(c *config, v string) (err error) { c.MethodOverride, err = parseBool(v); return err }},
	{"store", "ADMIT_STORE", "memory", "STORE", false, "memory, postgres://... or redis://...: where token decisions are shared",
		func(c *config, v string) (err error) { c.Store, err = parseStore(v); return err }},
	{"store-prefix", "ADMIT_STORE_PREFIX", "", "PREFIX", false, "start of every Redis key; give each deployment sharing a Redis its own (default \"admit:quota:\")",
		func(c *config, v string) error { c.StorePrefix = v; return nil }},
	{"store-table", "ADMIT_STORE_TABLE", "", "TABLE", false, "PostgreSQL table, optionally schema-qualified (default \"admit_quota\")",
		func(c *config, v string) error { c.StoreTable = v; return nil }},
	{"store-migrate", "ADMIT_STORE_MIGRATE", "true", "", false, "create the PostgreSQL table at startup when missing; false for roles without DDL rights",
		func(c *config, v string) (err error) { c.StoreMigrate, err = parseBool(v); return err }},
	{"store-fail-open", "ADMIT_STORE_FAIL_OPEN", "false", "", false, "admit requests when the store cannot decide; by default they are refused",
		func(c *config, v string) (err error) { c.StoreFailOpen, err = parseBool(v); return err }},
	{"max-conns", "ADMIT_MAX_CONNS", "4096", "N", false, "connections the proxy's listener keeps open at most; newer ones are closed on arrival",
		func(c *config, v string) (err error) { c.MaxConns, err = parseCount(v, 1); return err }},
	{"max-conns-per-client", "ADMIT_MAX_CONNS_PER_CLIENT", "64", "N", false, "connections one client (an IPv4 address or IPv6 /64, after the PROXY protocol) keeps open at most; trusted proxies are exempt; 0: no cap (set it behind an L4 balancer without the PROXY protocol)",
		func(c *config, v string) (err error) { c.MaxConnsPerClient, err = parseCount(v, 0); return err }},
	{"metrics-listen", "ADMIT_METRICS_LISTEN", "127.0.0.1:9464", "ADDR", false, "address of /metrics (and of a /healthz that no budget limits)",
		func(c *config, v string) (err error) { c.MetricsListen, err = parseAddr(v); return err }},
	{"tls-cert", "ADMIT_TLS_CERT", "", "FILE", false, "TLS certificate (PEM); with --tls-key, serves HTTPS and HTTP/2",
		func(c *config, v string) error { c.TLSCert = v; return nil }},
	{"tls-key", "ADMIT_TLS_KEY", "", "FILE", false, "TLS private key (PEM)",
		func(c *config, v string) error { c.TLSKey = v; return nil }},
	{"drain-delay", "ADMIT_DRAIN_DELAY", "0s", "DURATION", false, "after SIGTERM, how long health reports draining while new connections are still served, so load balancers notice first",
		func(c *config, v string) (err error) { c.DrainDelay, err = parseDuration(v, false); return err }},
	{"drain-timeout", "ADMIT_DRAIN_TIMEOUT", "25s", "DURATION", false, "how long in-flight requests may finish after the listener closes",
		func(c *config, v string) (err error) { c.DrainTimeout, err = parseDuration(v, true); return err }},
	{"log-format", "ADMIT_LOG_FORMAT", "text", "FORMAT", false, "text or json",
		func(c *config, v string) (err error) { c.LogFormat, err = parseLogFormat(v); return err }},
	{"log-level", "ADMIT_LOG_LEVEL", "info", "LEVEL", false, "debug, info, warn or error",
		func(c *config, v string) error { return c.LogLevel.UnmarshalText([]byte(v)) }},
	{"config", "ADMIT_CONFIG", "", "FILE", false, "YAML file with routes and budget overrides per group",
		func(c *config, v string) error { return c.readFile(v) }},
}

// values records a flag's raw values; the flag package sees every setting
// through it.
type values struct {
	list   []string
	multi  bool
	isBool bool
}

func (v *values) String() string {
	if v == nil {
		return ""
	}
	return strings.Join(v.list, " ")
}

func (v *values) Set(s string) error {
	if !v.multi {
		v.list = v.list[:0] // the last of repeated single flags wins, as usual
	}
	v.list = append(v.list, s)
	return nil
}

func (v *values) IsBoolFlag() bool { return v.isBool }

// parseConfig reads the configuration from args (without the program name),
// with getenv as the environment: a flag wins over its variable, a variable
// over the default, and an empty variable counts as unset. With -h it writes
// the usage to out and returns flag.ErrHelp; otherwise it writes nothing, and
// every error starts with "admit: " and names the flag or variable and the
// value it rejects.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("admit", flag.ContinueOnError)
	p := newParser(fs, settings)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(out)
			return config{}, err
		}
		return config{}, fmt.Errorf("admit: %w", err)
	}
	if fs.NArg() > 0 {
		return config{}, unexpected(args, fs.Args())
	}
	c, err := p.apply(getenv)
	if err != nil {
		return config{}, err
	}

	if c.Upstream == nil && !c.Demo {
		return config{}, errors.New("admit: --upstream (or ADMIT_UPSTREAM) is required unless --demo is set")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		set, unset := "tls-cert", "tls-key"
		if c.TLSCert == "" {
			set, unset = unset, set
		}
		return config{}, fmt.Errorf("admit: %s is set but --%s (%s) is not: give both or neither",
			p.source[set], unset, lookup(unset).env)
	}
	for _, only := range []struct {
		name string
		kind storeKind
	}{{"store-prefix", storeRedis}, {"store-table", storePostgres}} {
		if from, ok := p.source[only.name]; ok && c.Store.Kind != only.kind {
			return config{}, fmt.Errorf("admit: %s is set but the store is %s: it applies to a %s store only", from, c.Store.Kind, only.kind)
		}
	}
	if c.Demo && len(c.Routes) == 0 {
		c.Routes = demoRoutes
	}
	if c.Demo && c.Upstream == nil && c.UpstreamHealth == "" {
		c.UpstreamHealth = demoHealthPath
	}
	return c, nil
}

// parser binds a subset of the settings to a flag set, so that subcommands
// can share them.
type parser struct {
	settings []setting
	raw      []values
	source   map[string]string // flag name -> where its value came from, after apply
}

func newParser(fs *flag.FlagSet, subset []setting) *parser {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	p := &parser{settings: subset, raw: make([]values, len(subset))}
	for i, s := range subset {
		p.raw[i] = values{multi: s.multi, isBool: s.arg == ""}
		fs.Var(&p.raw[i], s.name, s.usage)
	}
	return p
}

// apply runs every setting on a new config with its flag values, its
// variable or its default, in that order of precedence.
func (p *parser) apply(getenv func(string) string) (config, error) {
	var c config
	p.source = make(map[string]string, len(p.settings))
	// The config file goes first so that its routes precede those of --route
	// and a conflict is reported on the flag.
	for _, fileFirst := range []bool{true, false} {
		for i, s := range p.settings {
			if (s.name == "config") != fileFirst {
				continue
			}
			vals, from := p.raw[i].list, "--"+s.name
			switch {
			case len(vals) > 0:
				p.source[s.name] = from
			case s.env != "" && getenv(s.env) != "":
				vals, from = []string{getenv(s.env)}, s.env
				p.source[s.name] = from
			case s.def != "":
				vals = []string{s.def}
			default:
				continue
			}
			for _, v := range vals {
				if err := s.apply(&c, v); err != nil {
					if s.name == "store" {
						v = redactURL(v)
					}
					return config{}, fmt.Errorf("admit: %s %q: %w", from, v, err)
				}
			}
		}
	}
	return c, nil
}

// unexpected explains the first argument the flag package did not take; the
// usual one is the value of a boolean flag written as a separate word.
func unexpected(args, rest []string) error {
	arg := rest[0]
	if i := len(args) - len(rest); i > 0 {
		if s := lookup(strings.TrimLeft(args[i-1], "-")); s != nil && s.arg == "" {
			return fmt.Errorf("admit: unexpected argument %q (a boolean flag takes its value as --flag=%s)", arg, arg)
		}
	}
	return fmt.Errorf("admit: unexpected argument %q", arg)
}

// lookup finds a setting by flag name, or returns nil.
func lookup(name string) *setting {
	for i := range settings {
		if settings[i].name == name {
			return &settings[i]
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: admit [flags]\n"+
		"       admit explain [flags] METHOD PATH   (admit explain -h for its flags)\n\n"+
		"admit is a rate-limiting reverse proxy for the anonymous routes of an app.\n"+
		"Each flag may also be set by the environment variable shown; the flag wins.\n\n")
	printSettings(w, settings)
}

func printSettings(w io.Writer, list []setting) {
	for _, s := range list {
		fmt.Fprintf(w, "  --%s", s.name)
		if s.arg != "" {
			fmt.Fprintf(w, " %s", s.arg)
		}
		fmt.Fprintf(w, "\n    \t%s", s.usage)
		var notes []string
		if s.env != "" {
			notes = append(notes, "env "+s.env)
		}
		if s.def != "" {
			notes = append(notes, fmt.Sprintf("default %q", s.def))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, "; "))
		}
		fmt.Fprintln(w)
	}
}

// String returns the route as --route takes it, quoted: "link=GET /l/{id}".
func (r route) String() string { return fmt.Sprintf("%q", string(r.Group)+"="+r.Pattern) }
