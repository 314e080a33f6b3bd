package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/demo"
	"github.com/admitgo/admit/server/routes"
	"github.com/admitgo/admit/server/storeurl"
)

// demoRoutes are the routes of --demo when neither flags nor the config file
// give any.
var demoRoutes = []Route{
	{Groups: []admit.Group{admit.GroupWebhook}, Pattern: "POST /hooks/{name}"},
	{Groups: []admit.Group{admit.GroupLink}, Pattern: "GET /l/{id}"},
	{Groups: []admit.Group{admit.GroupHealth}, Pattern: "GET /healthz"},
}

// Config is the server's configuration, read from flags, the environment and
// the optional config file, and checked: every field holds a usable value.
type Config struct {
	Listen            string                        // address of the proxy, host:port
	Upstream          *url.URL                      // nil only with Demo: the built-in demo upstream
	UpstreamHealth    string                        // path of the upstream's health endpoint; empty: none
	Demo              bool                          // demo routes (unless Routes are given) and, without Upstream, a demo upstream
	Routes            []Route                       // the config file's routes, then those of --route
	TrustedProxies    []netip.Prefix                // peers whose forwarding headers are believed; never /0
	ProxyProtocolFrom []netip.Prefix                // peers that must send a PROXY protocol header
	PassHeaders       []string                      // proxy facts forwarded from trusted proxies, canonical names
	Shadow            bool                          // count would_* outcomes, reject nothing
	PolicyHeaders     bool                          // send RateLimit-Policy and RateLimit fields
	EscapedSlashes    canon.Slashes                 // what to do with %2F, %5C and \ in paths
	RouteFolding      bool                          // also match lower-cased paths and a toggled trailing slash
	MethodOverride    bool                          // forward method override headers and match their methods
	Methods           []string                      // the methods admit forwards; any other is refused with 501
	UpstreamProfile   routes.Profile                //  how the upstream's framework routes; the file's upstream_profile unless given
	AllowSpellings    canon.Classes                 // spellings let through rather than refused; the file's allow_spellings unless given
	Upgrades          []string                      // protocols a request may switch to, lower-case; empty: none; the file's upgrades unless given
	Store             storeurl.Store                // where per-client tokens are decided
	StorePrefix       string                        // Redis key prefix; empty: the store's default
	StoreTable        string                        // PostgreSQL table, may be schema-qualified; empty: the store's default
	StoreMigrate      bool                          // create the PostgreSQL table at startup when missing
	StoreFail         quota.Failure                 // what a request gets while the store cannot decide
	Replicas          int                           // replicas sharing the store, for --store-fail local; 0 otherwise
	MaxConns          int                           // open connections on the proxy's listener; at least 1
	MaxConnsPerClient int                           // open connections per client key; 0: no cap
	MetricsListen     string                        // address of /metrics, host:port
	MetricsMaxConns   int                           // open connections on the metrics listener; at least 1
	MetricsPerClient  int                           // open connections on the metrics listener per client key; 0: no cap
	TLSCert, TLSKey   string                        // both set or both empty
	H2C               bool                          // serve cleartext HTTP/2 with prior knowledge too; never with TLS
	HTTPEngine        Engine                        // what serves the listeners and forwards upstream
	DrainDelay        time.Duration                 // how long health reports draining before the listener closes
	DrainTimeout      time.Duration                 // how long in-flight requests may run after SIGTERM; > 0
	LogFormat         string                        // "text" or "json"
	LogLevel          slog.Level                    // the least severe level logged
	AccessLog         string                        // where the access log goes: "-" for stderr; empty: off
	AccessLogRefusals int                           // refusals the access log writes per second at most
	ConfigFile        string                        // the YAML file read, if any
	AdminTokenFile    string                        // the file adminToken was read from; empty: admin writes are off
	AdminToken        string                        // the bearer token admin writes need; never logged
	AdminHosts        []string                      // names the metrics listener answers to beyond addresses and localhost; opshost.ParseNames's form
	AllowNoRoutes     bool                          // validate only: a configuration without routes passes
	Auth              bool                          // admit auth: decide a front's forward-auth requests, forward nothing
	DenyStatus        int                           // admit auth: the status of every refusal; 0: the door's own
	GRPCListen        string                        // admit auth: address of Envoy's ext_authz Check, host:port; empty: none
	EnvoyHTTPPrefix   string                        // admit auth: the path_prefix of Envoy's HTTP ext_authz; empty: none
	Stderr            io.Writer                     // where --access-log - writes; nil: os.Stderr
	Budgets           map[admit.Group]admit.Budget  // the config file's, field by field; nil when it gives none
	Likes             map[admit.Group]admit.Group   // the built-in group each group is, or is like
	Async             map[admit.Group]time.Duration // groups in the async mode, by reconcile interval; nil: none
	ExemptFrom        map[admit.Group]string        // where each group's exempt_keys_from reads its keys; nil: none

	flagRoutes []Route // those of --route, appended to the file's once it is read
	// The file's upstream_profile and allow_spellings, which apply unless
	// a flag or variable gives them; nil when the file does not.
	fileProfile *routes.Profile
	fileAllow   *canon.Classes
	// The file's upgrades, admin_hosts and http_engine, which apply unless
	// a flag or variable gives them; nil when the file does not.
	fileUpgrades *[]string
	fileHosts    *[]string
	fileEngine   *Engine

	file        string              // the config file as errors name it: --config "admit.yaml"
	budgetLines map[admit.Group]int // the line of each group under the file's budgets
	getenv      func(string) string // the environment Apply read, for exempt_keys_from: env:NAME

	// Not settings: tests and benchmarks set them.
	Now       func() time.Time  // the door's clock; nil: time.Now
	Transport http.RoundTripper // to the upstream; nil: upstream.Transport()
}

// useEnv keeps the environment Apply reads, for the config file's
// exempt_keys_from: env:NAME.
func (c *Config) useEnv(getenv func(string) string) { c.getenv = getenv }

// Route puts requests matching a ServeMux pattern under one or more groups'
// limits, checked in order, each spending Cost.
type Route struct {
	Groups  []admit.Group
	Pattern string
	Cost    int // 0: 1
	// StrictMethods says the app runs the route's handler for the route's
	// method alone, so that a request under a method no route names is not
	// held to it.
	StrictMethods bool
	from          string // where it was given, for errors: --route "...", or the file's line and index
	inFile        bool   // from the config file, whose name from leaves out
}

// String returns the route as --route takes it, quoted:
// "per-address,tenant=GET /t/{tenant}".
func (r Route) String() string { return fmt.Sprintf("%q", r.Spec()) }

// Spec is the route as --route takes it.
func (r Route) Spec() string {
	names := make([]string, len(r.Groups))
	for i, g := range r.Groups {
		names[i] = string(g)
	}
	return strings.Join(names, ",") + "=" + r.Pattern
}

// Spend returns what a request of the route spends in each limit.
func (r Route) Spend() int { return max(r.Cost, 1) }

// Options are the server's settings, in the order of its usage.
// The operations listener's connection caps, the same for every front.
const (
	defaultMetricsMaxConns  = "64"
	defaultMetricsPerClient = "8"
	usageMetricsMaxConns    = "connections the metrics listener keeps open at most; newer ones are closed on arrival"
	usageMetricsPerClient   = "connections one client (an IPv4 address or IPv6 /64, loopback included) keeps open on the metrics listener at most; the default leaves a scraper and a probe on one address room; 0: no cap"
)

var Options = []Option{
	{Name: "listen", arg: "ADDR", Def: ":8080", Usage: "address of the proxy; port 0 picks a free port",
		Set:     func(c *Config, v string) (err error) { c.Listen, err = ParseAddr(v); return err },
		running: func(c Config) any { return c.Listen }},
	{Name: "upstream", arg: "URL", Usage: "the app to proxy to; required unless --demo",
		Set:     func(c *Config, v string) (err error) { c.Upstream, err = parseUpstream(v); return err },
		running: func(c Config) any { return c.Upstream }},
	{Name: "upstream-health", arg: "PATH", Usage: "path of the upstream's health endpoint, probed at most once a second for health answers admit gives itself; without it admit answers serving while it runs",
		Set:     func(c *Config, v string) (err error) { c.UpstreamHealth, err = parsePath(v); return err },
		running: func(c Config) any { return c.UpstreamHealth }},
	{Name: "demo", Def: "false", Usage: "demo routes and, without --upstream, a built-in demo upstream",
		Set:     func(c *Config, v string) (err error) { c.Demo, err = ParseBool(v); return err },
		running: func(c Config) any { return c.Demo }},
	{Name: "route", arg: "GROUP[,GROUP...]=PATTERN", multi: true, NoEnv: true, Usage: "put requests matching a ServeMux pattern under a group's limit (webhook, link, health or one the config file names), or several, checked in order; repeatable; with --demo and no routes, the demo routes",
		Set: func(c *Config, v string) error { return c.addFlagRoute(v) }},
	{Name: "trusted-proxy", arg: "CIDRS", multi: true, oldEnv: []string{"ADMIT_TRUSTED_PROXIES"}, Usage: "proxies whose forwarding headers are believed: CIDRs or addresses, comma or space separated; repeatable; /0 refused",
		Set:     func(c *Config, v string) error { return appendPrefixes(&c.TrustedProxies, v) },
		running: func(c Config) any { return c.TrustedProxies }},
	{Name: "pass-header", arg: "NAMES", multi: true, Usage: "headers that admit strips as proxy facts (docs: Proxy facts) but a trusted proxy in front sets on purpose, such as X-SSL-Client-Cert: forwarded as spelled from a --trusted-proxy peer, stripped from every other; comma separated; repeatable",
		Set:     func(c *Config, v string) error { return appendHeaderNames(&c.PassHeaders, v) },
		running: func(c Config) any { return c.PassHeaders }},
	{Name: "proxy-protocol-from", arg: "CIDRS", multi: true, Usage: "peers that must send a PROXY protocol header: CIDRs or addresses, comma or space separated; repeatable",
		Set:     func(c *Config, v string) error { return appendPrefixes(&c.ProxyProtocolFrom, v) },
		running: func(c Config) any { return c.ProxyProtocolFrom }},
	{Name: "shadow", aliases: []string{"disable-anon-route-limits"}, Def: "false", Usage: "shadow mode: reject nothing, count what would have been rejected",
		Set:     func(c *Config, v string) (err error) { c.Shadow, err = ParseBool(v); return err },
		running: func(c Config) any { return c.Shadow }},
	{Name: "policy-headers", Def: "false", Usage: "send every group's rate-limit fields (its ratelimit_headers) on admitted answers too; refusals always carry them",
		Set:     func(c *Config, v string) (err error) { c.PolicyHeaders, err = ParseBool(v); return err },
		running: func(c Config) any { return c.PolicyHeaders }},
	{Name: "escaped-slashes", arg: "POLICY", Def: "reject", Usage: "paths with an encoded slash or backslash (%2F, %5C) or a backslash: reject (400), decode (into /, and forward decoded) or keep (forward as they are; only for upstreams that never decode them)",
		Set:     func(c *Config, v string) (err error) { c.EscapedSlashes, err = canon.ParseSlashes(v); return err },
		running: func(c Config) any { return c.EscapedSlashes }},
	{Name: "route-folding", Def: "true", Usage: "limit a request whose lower-cased path, or path with a trailing slash added or removed, matches a limited route, as upstreams that ignore case or trailing slashes route it; false for upstreams that route exactly",
		Set:     func(c *Config, v string) (err error) { c.RouteFolding, err = ParseBool(v); return err },
		running: func(c Config) any { return c.RouteFolding }},
	{Name: "method-override", Def: "false", Usage: "forward X-HTTP-Method-Override, X-HTTP-Method and X-Method-Override, and limit a request as each method they name too; by default they are removed",
		Set:     func(c *Config, v string) (err error) { c.MethodOverride, err = ParseBool(v); return err },
		running: func(c Config) any { return c.MethodOverride }},
	{Name: "methods", arg: "METHODS", Def: DefaultMethods, Usage: "the methods admit forwards, comma or space separated; any other is refused with 501, and TRACE and CONNECT always are",
		Set:     func(c *Config, v string) (err error) { c.Methods, err = parseMethods(v); return err },
		running: func(c Config) any { return c.Methods }},
	{Name: "upstream-profile", arg: "PROFILE", Def: "generic", Usage: "how the app's framework maps a request to a handler, so that admit limits every spelling it routes to a limited handler: servlet (path parameters, with --allow-spellings path_parameter; _method), rails (format suffixes, _method in forms), rack (_method in forms), php (front controllers, _method), express (_method), or generic, every one of them",
		Set: func(c *Config, v string) (err error) { c.UpstreamProfile, err = routes.ParseProfile(v); return err }},
	{Name: "allow-spellings", arg: "CLASSES", Def: "none", Usage: "spellings to let through rather than refuse with 400, comma separated: path_parameter (; and %3B), encoded_percent (%25), control (escaped control characters), non_ascii (raw bytes above 0x7F, escapes that are not UTF-8), encoded_delimiter (%3F and %23), host (a Host that is not one host and port)",
		Set: func(c *Config, v string) (err error) { c.AllowSpellings, err = canon.ParseClasses(v); return err }},
	{Name: "upgrade", arg: "PROTOCOLS", Def: DefaultUpgrades, multi: true, Usage: "protocols a request may switch to with Upgrade, comma separated; repeatable; none for no upgrade; any other Upgrade is removed and the request forwarded as a plain one; h2c may not be allowed",
		Set:     func(c *Config, v string) error { return parseUpgrades(&c.Upgrades, v) },
		running: func(c Config) any { return c.Upgrades }},
	{Name: "store", arg: "STORE", Def: "memory", secret: true, Usage: "memory, postgres://..., redis://..., redis+cluster://... or redis+sentinel://... (rediss for TLS): where token decisions are shared",
		Set: func(c *Config, v string) (err error) {
			if c.Store, err = storeurl.Parse(v); err == nil && c.Store.Kind.CountsOnly() {
				return errors.New("memcache:// counts admit rls's fixed windows only; admit and admit auth decide token buckets, which memcached cannot decide atomically: want memory or a postgres:// or redis:// URL")
			}
			return err
		},
		running: func(c Config) any { return c.Store }},
	{Name: "store-prefix", arg: "PREFIX", Usage: "start of every Redis key; give each deployment sharing a Redis its own (default \"admit:quota:\")",
		Set:     func(c *Config, v string) error { c.StorePrefix = v; return nil },
		running: func(c Config) any { return c.StorePrefix }},
	{Name: "store-table", arg: "TABLE", Usage: "PostgreSQL table, optionally schema-qualified (default \"admit_quota\")",
		Set:     func(c *Config, v string) error { c.StoreTable = v; return nil },
		running: func(c Config) any { return c.StoreTable }},
	{Name: "store-migrate", Def: "true", Usage: "create the PostgreSQL table at startup when missing; false for roles without DDL rights",
		Set:     func(c *Config, v string) (err error) { c.StoreMigrate, err = ParseBool(v); return err },
		running: func(c Config) any { return c.StoreMigrate }},
	{Name: "store-fail", arg: "POLICY", Def: "closed", Usage: "what a request gets while the shared store cannot decide: closed (503), open (admitted without a limit) or local (this replica's own buckets at the budget divided by --replicas)",
		Set:     func(c *Config, v string) (err error) { c.StoreFail, err = parseStoreFail(v, false); return err },
		running: func(c Config) any { return c.StoreFail }},
	{Name: "replicas", arg: "N", Usage: "with --store-fail local, how many replicas share the store: each decides at 1/N of every budget while it is down",
		Set:     func(c *Config, v string) (err error) { c.Replicas, err = parseCount(v, 1); return err },
		running: func(c Config) any { return c.Replicas }},
	{Name: "max-conns", arg: "N", Def: "4096", Usage: "connections the proxy's listener keeps open at most; newer ones are closed on arrival",
		Set:     func(c *Config, v string) (err error) { c.MaxConns, err = parseCount(v, 1); return err },
		running: func(c Config) any { return c.MaxConns }},
	{Name: "max-conns-per-client", arg: "N", Def: "64", Usage: "connections one client (an IPv4 address or IPv6 /64, after the PROXY protocol) keeps open at most; trusted proxies are exempt; 0: no cap (set it behind an L4 balancer without the PROXY protocol)",
		Set:     func(c *Config, v string) (err error) { c.MaxConnsPerClient, err = parseCount(v, 0); return err },
		running: func(c Config) any { return c.MaxConnsPerClient }},
	{Name: "metrics-listen", arg: "ADDR", Def: "127.0.0.1:9464", Usage: "address of /metrics (and of a /healthz that no budget limits)",
		Set:     func(c *Config, v string) (err error) { c.MetricsListen, err = ParseAddr(v); return err },
		running: func(c Config) any { return c.MetricsListen }},
	{Name: "metrics-max-conns", arg: "N", Def: defaultMetricsMaxConns, Usage: usageMetricsMaxConns,
		Set:     func(c *Config, v string) (err error) { c.MetricsMaxConns, err = parseCount(v, 1); return err },
		running: func(c Config) any { return c.MetricsMaxConns }},
	{Name: "metrics-max-conns-per-client", arg: "N", Def: defaultMetricsPerClient, Usage: usageMetricsPerClient,
		Set:     func(c *Config, v string) (err error) { c.MetricsPerClient, err = parseCount(v, 0); return err },
		running: func(c Config) any { return c.MetricsPerClient }},
	{Name: "tls-cert", arg: "FILE", Usage: "TLS certificate (PEM); with --tls-key, serves HTTPS and HTTP/2",
		Set:     func(c *Config, v string) error { c.TLSCert = v; return nil },
		running: func(c Config) any { return c.TLSCert }},
	{Name: "tls-key", arg: "FILE", Usage: "TLS private key (PEM)",
		Set:     func(c *Config, v string) error { c.TLSKey = v; return nil },
		running: func(c Config) any { return c.TLSKey }},
	{Name: "h2c", Def: "false", Usage: "also serve cleartext HTTP/2 with prior knowledge on the proxy's listener, for gRPC clients and probes without TLS (Kubernetes gRPC probes, grpc-health-probe); not with --tls-cert, which serves HTTP/2 over TLS",
		Set:     func(c *Config, v string) (err error) { c.H2C, err = ParseBool(v); return err },
		running: func(c Config) any { return c.H2C }},
	{Name: "http-engine", arg: "ENGINE", Def: "admit", Usage: "what serves the listeners and forwards to the upstream: admit (its own HTTP/1.1 engine for plain requests on a cleartext listener, and its direct path to a plain-HTTP upstream, each handing the rest to net/http) or net/http (net/http's server and Transport alone: the way back should admit's own read something wrongly)",
		Set:     func(c *Config, v string) (err error) { c.HTTPEngine, err = parseEngine(v); return err },
		running: func(c Config) any { return c.HTTPEngine }},
	{Name: "drain-delay", arg: "DURATION", Def: "0s", Usage: "after SIGTERM, how long health reports draining while new connections are still served, so load balancers notice first",
		Set:     func(c *Config, v string) (err error) { c.DrainDelay, err = parseDuration(v, false); return err },
		running: func(c Config) any { return c.DrainDelay }},
	{Name: "drain-timeout", arg: "DURATION", Def: "25s", Usage: "how long in-flight requests may finish after the listener closes",
		Set:     func(c *Config, v string) (err error) { c.DrainTimeout, err = parseDuration(v, true); return err },
		running: func(c Config) any { return c.DrainTimeout }},
	{Name: "log-format", arg: "FORMAT", Def: "text", Usage: "text or json",
		Set:     func(c *Config, v string) (err error) { c.LogFormat, err = parseLogFormat(v); return err },
		running: func(c Config) any { return c.LogFormat }},
	{Name: "log-level", arg: "LEVEL", Def: "info", Usage: "debug, info, warn or error",
		Set:     func(c *Config, v string) (err error) { c.LogLevel, err = ParseLogLevel(v); return err },
		running: func(c Config) any { return c.LogLevel }},
	{Name: "access-log", arg: "FILE", Usage: "write a JSON line for every request a limit decides, and for every request refused as malformed, to FILE (appended to, and opened again on reload, after rotation) or to stderr for -; off by default",
		Set:     func(c *Config, v string) error { c.AccessLog = v; return nil },
		running: func(c Config) any { return c.AccessLog }},
	{Name: "access-log-refusals", arg: "N", Def: "100", Usage: "refused requests (and shadow mode's would-be refusals, and requests the store's failure policy decided) the access log writes per second at most, malformed requests and a limit's lines each, so that a flood cannot fill a disk; the next such line counts those left out in \"suppressed\"; 0: none",
		Set:     func(c *Config, v string) (err error) { c.AccessLogRefusals, err = parseCount(v, 0); return err },
		running: func(c Config) any { return c.AccessLogRefusals }},
	{Name: "config", arg: "FILE", Usage: "YAML file with routes and budgets per group",
		Set:     func(c *Config, v string) error { c.ConfigFile = v; return nil },
		running: func(c Config) any { return c.ConfigFile }},
	{Name: "admin-token-file", arg: "FILE", Usage: "file holding the bearer token that reading and resetting a client on the metrics listener (GET and DELETE /admit/groups/GROUP/clients/KEY) require; read again on reload; without it resets are refused and client reads are answered to loopback peers only",
		Set:     func(c *Config, v string) error { c.AdminTokenFile = v; return nil },
		running: func(c Config) any { return c.AdminTokenFile }},
	{Name: "admin-host", arg: "NAMES", multi: true, Usage: "names the metrics listener answers to besides an IP address, localhost and names under .localhost, comma or space separated; repeatable; a request with any other Host is refused with 421, so that a web page cannot reach it by DNS rebinding",
		Set:     func(c *Config, v string) error { return appendHosts(&c.AdminHosts, v) },
		running: func(c Config) any { return c.AdminHosts }},
	{Name: "version", Def: "false", NoEnv: true, Usage: "print the version and exit",
		Set: func(c *Config, v string) error { return nil }},
}

// Parse reads the configuration from args (without the program name),
// with getenv as the environment: a flag wins over its variable, a variable
// over the default, and an empty variable counts as unset. With -h it writes
// the usage to out and returns flag.ErrHelp; otherwise it writes nothing, and
// every error starts with "admit: " and names the flag, variable or config
// file and the value it rejects.
func Parse(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c, err := ParseWith("admit", Options, args, getenv, out, printUsage)
	if err == nil && c.Upstream == nil && !c.Demo {
		return Config{}, errors.New("admit: --upstream (or ADMIT_UPSTREAM) is required unless --demo is set")
	}
	return c, err
}

// ParseWith is Parse for a command named name, which takes opts
// and prints usage for -h, without requiring an upstream, which validate
// never connects to. After --version it prints the version and returns
// ErrVersion.
func ParseWith(name string, opts []Option, args []string, getenv func(string) string, out io.Writer, usage func(io.Writer)) (Config, error) {
	set := NewOptionSet(name, opts)
	if err := set.Parse(name, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(out)
		}
		return Config{}, err
	}
	if v := set.given["version"]; len(v) > 0 {
		on, err := ParseBool(v[len(v)-1])
		if err != nil {
			from, _ := set.From("version")
			return Config{}, fmt.Errorf("admit: %s %q: %w", from, v[len(v)-1], err)
		}
		if on {
			fmt.Fprintln(out, Version())
			return Config{}, ErrVersion
		}
	}
	if set.FS.NArg() > 0 {
		return Config{}, set.Unexpected(args, set.FS.Args())
	}
	var c Config
	if err := set.Apply(getenv, &c); err != nil {
		return Config{}, err
	}
	if err := c.Finish(set); err != nil {
		return Config{}, err
	}
	if err := CheckKeyPair(set, c.TLSCert, c.TLSKey); err != nil {
		return Config{}, err
	}
	if c.H2C && c.TLSCert != "" {
		from, _ := set.From("h2c")
		return Config{}, fmt.Errorf("admit: %s is set with --tls-cert: h2c is HTTP/2 without TLS, and with TLS admit serves HTTP/2 already; give one or the other", from)
	}
	if c.AdminTokenFile != "" {
		var err error
		if c.AdminToken, err = readToken(c.AdminTokenFile); err != nil {
			from, _ := set.From("admin-token-file")
			return Config{}, fmt.Errorf("admit: %s %q: %w", from, c.AdminTokenFile, err)
		}
	}
	for _, only := range []struct {
		name string
		kind storeurl.Kind
	}{{"store-prefix", storeurl.Redis}, {"store-table", storeurl.Postgres}} {
		if from, ok := set.From(only.name); ok && c.Store.Kind != only.kind {
			return Config{}, fmt.Errorf("admit: %s is set but the store is %s: it applies to a %s store only", from, c.Store.Kind, only.kind)
		}
	}
	if c.Demo && c.Upstream == nil && c.UpstreamHealth == "" {
		c.UpstreamHealth = demo.HealthPath
	}
	return c, nil
}

// Finish checks that --store-fail and --replicas fit together, reads the
// config file, if any, and puts its routes before those of --route, so that
// a conflict is reported on the flag; with --demo and no routes at all, the
// demo routes apply.
func (c *Config) Finish(set *OptionSet) error {
	// The route checks below divide budgets by --replicas: the pair must
	// be whole before them.
	if err := checkStoreFail(c, set); err != nil {
		return err
	}
	file := ""
	if c.ConfigFile != "" {
		from, _ := set.From("config")
		file = fmt.Sprintf("%s %q", from, c.ConfigFile)
		c.file = file
		if err := c.readFile(c.ConfigFile); err != nil {
			return fmt.Errorf("admit: %s: %w", file, err)
		}
	}
	if _, given := set.From("upstream-profile"); !given && c.fileProfile != nil {
		c.UpstreamProfile = *c.fileProfile
	}
	if _, given := set.From("allow-spellings"); !given && c.fileAllow != nil {
		c.AllowSpellings = *c.fileAllow
	}
	if _, given := set.From("upgrade"); !given && c.fileUpgrades != nil {
		c.Upgrades = *c.fileUpgrades
	}
	if _, given := set.From("admin-host"); !given && c.fileHosts != nil {
		c.AdminHosts = *c.fileHosts
	}
	if _, given := set.From("http-engine"); !given && c.fileEngine != nil {
		c.HTTPEngine = *c.fileEngine
	}
	for _, r := range c.flagRoutes {
		if err := c.addRoute(r); err != nil {
			return fmt.Errorf("admit: %s: %w", r.from, err)
		}
	}
	c.flagRoutes = nil
	if c.Demo && len(c.Routes) == 0 {
		c.Routes = demoRoutes
	}
	for _, g := range slices.Sorted(maps.Keys(c.Async)) {
		if c.Store.Kind == storeurl.Memory {
			return fmt.Errorf("admit: %s: line %d: budgets.%s.sync: async reconciles with a shared store, and --store is memory: give --store postgres://... or redis://..., or leave sync out", file, c.budgetLines[g], g)
		}
	}
	return c.checkRoutes(file)
}
