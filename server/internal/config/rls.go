package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/server/storeurl"
)

// The values of admit rls's --env: admit reads only its own variables;
// envoy reads envoyproxy/ratelimit's too, below admit's.
const (
	EnvAdmit     = "admit"
	EnvReference = "envoy"
)

// RLS is the configuration of admit rls, Envoy's rate limit service: what
// its flags, its ADMIT_RLS_ variables and, in reference mode,
// envoyproxy/ratelimit's variables set, each value checked. A reload reads
// its configuration files again and none of these.
type RLS struct {
	Env                       string // EnvAdmit or EnvReference
	GRPCListen                string // address of the gRPC service, host:port
	MetricsListen             string // address of /metrics and the health and /rlconfig pages
	MetricsMaxConns           int    // open connections on the metrics listener; at least 1
	MetricsPerClient          int    // open connections per client on the metrics listener; 0: no cap
	HTTPListen                string // address of /healthcheck and /json; empty: none
	MaxConns                  int    // open connections on the gRPC listener; at least 1
	MaxConnsPerClient         int    // open connections per client key; 0: no cap
	Store                     storeurl.Store
	PerSecondStore            storeurl.Store // counts the limits of a second; zero Kind: Store counts them
	StoreTable, StorePrefix   string         // empty: the store's default
	StoreFail                 quota.Failure  // what a call gets while the store cannot count
	TLSCert, TLSKey           string         // both set or both empty
	ClientCA                  string         // PEM bundle the gRPC clients' certificates must chain to; "": none asked for; needs TLSCert
	ClientSAN                 string         // a DNS name or IP address the client's certificate must carry; "": any; needs ClientCA
	Config                    string         // envoyproxy/ratelimit YAML file, or a directory of them; "" with XDS.Server
	XDS                       XDS            // the xDS server the configuration comes from in place of Config
	Shadow, QuotaMode         bool
	StopIncrement             bool    // count none of a request's other descriptors when one passes its limit
	LocalCacheBytes           int     // the local over-limit cache's memory; 0: none
	NearLimitRatio            float64 // the share of a limit past which hits count as near_limit; above 0, at most 1
	Headers                   bool    // ask Envoy to add the limit headers
	LimitHeader, RemainingHdr string
	ResetHeader               string
	DrainTimeout              time.Duration // how long calls in flight may finish after SIGTERM; > 0
	Statsd                    Statsd        // where the stats are sent; zero: nowhere
	StatsdInterval            time.Duration // how often they are sent; > 0
	StatsTags                 StatTags      // the tags in every stat's name
	LogLevel                  slog.Level
	LogFormat                 string   // text or json
	AdminHosts                []string // names the metrics listener answers to beyond addresses and localhost
}

// Front names admit rls's errors and variables: ADMIT_RLS_ and the flag's
// name, beside the proxy's ADMIT_ ones.
func (RLS) Front() (string, string) { return "admit rls", "ADMIT_RLS_" }

// RLSOptions are admit rls's settings, in the order of its usage.
var RLSOptions = []OptionFor[RLS]{
	{Name: "config", arg: "FILE|DIR", Usage: "envoyproxy/ratelimit YAML file, or a directory of them (one domain each); required unless --xds-server",
		Set: func(c *RLS, v string) error { c.Config = v; return nil }},
	{Name: "xds-server", arg: "ADDR", Usage: "host:port of an xDS server to take the configuration from in place of --config, which is then not given: go-control-plane's RateLimitConfig resources (one domain each) over ADS in state of the world, as envoyproxy/ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW; serves once the first configuration is accepted (see docs/rls.md)",
		Set: func(c *RLS, v string) (err error) {
			if v == "" {
				c.XDS.Server = ""
				return nil
			}
			c.XDS.Server, err = ParseDialAddr(v)
			return err
		}},
	{Name: "xds-node-id", arg: "ID", Def: "default", Usage: "the node id sent to --xds-server, which it keys its configurations by (CONFIG_GRPC_XDS_NODE_ID)",
		Set: func(c *RLS, v string) error { c.XDS.NodeID = v; return nil }},
	{Name: "xds-node-metadata", arg: "KEY=VALUE,...", Usage: "the node's metadata sent to --xds-server, as strings (CONFIG_GRPC_XDS_NODE_METADATA)",
		Set: func(c *RLS, v string) (err error) { c.XDS.NodeMetadata, err = parsePairs(v, "=", false); return err }},
	{Name: "xds-headers", arg: "KEY:VALUE,...", hidden: true, Usage: "gRPC metadata sent on the stream to --xds-server, such as a token (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS)",
		Set: func(c *RLS, v string) (err error) { c.XDS.Headers, err = parsePairs(v, ":", true); return err }},
	{Name: "xds-tls", Usage: "connect to --xds-server over TLS, checking its certificate against --xds-ca or the system's roots and its name against --xds-san or the host of --xds-server (CONFIG_GRPC_XDS_SERVER_USE_TLS)",
		Set: func(c *RLS, v string) (err error) { c.XDS.TLS, err = ParseBool(v); return err }},
	{Name: "xds-ca", arg: "FILE", Usage: "with --xds-tls, the CA certificates (PEM) the xDS server's certificate must chain to, in place of the system's roots (CONFIG_GRPC_XDS_SERVER_TLS_CACERT)",
		Set: func(c *RLS, v string) error { c.XDS.CA = v; return nil }},
	{Name: "xds-san", arg: "NAME", Usage: "with --xds-tls, the DNS name or IP address the xDS server's certificate must carry, in place of the host of --xds-server (CONFIG_GRPC_XDS_SERVER_TLS_SAN)",
		Set: func(c *RLS, v string) error { c.XDS.SAN = v; return nil }},
	{Name: "xds-client-cert", arg: "FILE", Usage: "with --xds-tls and --xds-client-key, the certificate (PEM) shown to the xDS server; read again when it changes (CONFIG_GRPC_XDS_CLIENT_TLS_CERT)",
		Set: func(c *RLS, v string) error { c.XDS.ClientCert = v; return nil }},
	{Name: "xds-client-key", arg: "FILE", Usage: "its private key (PEM) (CONFIG_GRPC_XDS_CLIENT_TLS_KEY)",
		Set: func(c *RLS, v string) error { c.XDS.ClientKey = v; return nil }},
	{Name: "xds-retry", arg: "DURATION", Def: "10s", Usage: "the wait before a new stream to --xds-server once one failed or ended, doubled at each failure up to --xds-retry-max, each wait shortened at random by up to a half; back to this once a stream brings a message (XDS_CLIENT_BACKOFF_INITIAL_INTERVAL)",
		Set: func(c *RLS, v string) (err error) { c.XDS.Retry, err = parseDuration(v, true); return err }},
	{Name: "xds-retry-max", arg: "DURATION", Def: "60s", Usage: "the longest wait before a new stream to --xds-server (XDS_CLIENT_BACKOFF_MAX_INTERVAL)",
		Set: func(c *RLS, v string) (err error) { c.XDS.RetryMax, err = parseDuration(v, true); return err }},
	{Name: "xds-max-msg-bytes", arg: "N", Def: "4194304", Usage: "the largest message taken from --xds-server, at most 16 MiB, a configuration file's bound; a larger one ends the stream, and the configuration in force stays (XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES)",
		Set: func(c *RLS, v string) (err error) { c.XDS.MaxMsgBytes, err = parseMsgBytes(v); return err }},
	{Name: "env", arg: "NAME", Def: EnvAdmit, Usage: "whose environment variables are read beside admit rls's own: admit (none) or envoy (envoyproxy/ratelimit's, below admit's; the default when run as ratelimit; see docs/rls.md)",
		Set: func(c *RLS, v string) error {
			if v != EnvAdmit && v != EnvReference {
				return fmt.Errorf("want %s or %s", EnvAdmit, EnvReference)
			}
			c.Env = v
			return nil
		}},
	{Name: "grpc-listen", aliases: []string{"listen"}, arg: "ADDR", Def: ":8081", Usage: "address of the gRPC service (envoyproxy/ratelimit's GRPC_HOST and GRPC_PORT); cleartext HTTP/2 (h2c) unless --tls-cert",
		Set: func(c *RLS, v string) (err error) { c.GRPCListen, err = ParseAddr(v); return err }},
	{Name: "metrics-listen", arg: "ADDR", Def: "127.0.0.1:9464", Usage: "address of /metrics, /healthz, /healthcheck, /rlconfig and /stats (envoyproxy/ratelimit's DEBUG_HOST and DEBUG_PORT)",
		Set: func(c *RLS, v string) (err error) { c.MetricsListen, err = ParseAddr(v); return err }},
	{Name: "metrics-max-conns", arg: "N", Def: defaultMetricsMaxConns, Usage: usageMetricsMaxConns,
		Set: func(c *RLS, v string) (err error) { c.MetricsMaxConns, err = parseCount(v, 1); return err }},
	{Name: "metrics-max-conns-per-client", arg: "N", Def: defaultMetricsPerClient, Usage: usageMetricsPerClient,
		Set: func(c *RLS, v string) (err error) { c.MetricsPerClient, err = parseCount(v, 0); return err }},
	{Name: "http-listen", arg: "ADDR", Usage: "address of /healthcheck and /json, ShouldRateLimit over JSON (envoyproxy/ratelimit's HOST and PORT); empty: not served",
		Set: func(c *RLS, v string) (err error) {
			if v == "" {
				c.HTTPListen = ""
				return nil
			}
			c.HTTPListen, err = ParseAddr(v)
			return err
		}},
	// The caps' ranges are checked once every value is read, in the words
	// of their own errors (checkRLS).
	{Name: "max-conns", arg: "N", Def: "4096", Usage: "connections the gRPC listener keeps open at most; newer ones are closed on arrival",
		Set: func(c *RLS, v string) (err error) { c.MaxConns, err = parseWhole(v); return err }},
	{Name: "max-conns-per-client", arg: "N", Def: "0", Usage: "connections one client (an IPv4 address or IPv6 /64) keeps open on the gRPC listener at most; 0: no cap, since a mesh's sidecar may carry every Envoy's connections from one address",
		Set: func(c *RLS, v string) (err error) { c.MaxConnsPerClient, err = parseWhole(v); return err }},
	{Name: "store", arg: "STORE", Def: "memory", secret: true, Usage: "memory, postgres://..., redis://..., redis+cluster://... or redis+sentinel://... (rediss for TLS), or memcache://host:port[,host:port...] (fixed windows only: a token bucket is refused): where the counts live",
		Set: func(c *RLS, v string) (err error) { c.Store, err = storeurl.Parse(v); return err }},
	{Name: "per-second-store", arg: "URL", secret: true, Usage: "a store of their own for the fixed-window limits whose unit is a second (token buckets stay on --store), as envoyproxy/ratelimit's REDIS_PERSECOND: postgres://..., redis://... or memcache://... (the forms of --store but memory), under --store-table and --store-prefix; empty: --store counts them",
		Set: func(c *RLS, v string) (err error) {
			if v == "" {
				c.PerSecondStore = storeurl.Store{}
				return nil
			}
			c.PerSecondStore, err = storeurl.Parse(v)
			return err
		}},
	{Name: "store-table", arg: "TABLE", Usage: "PostgreSQL table, optionally schema-qualified (default \"admit_quota\")",
		Set: func(c *RLS, v string) error { c.StoreTable = v; return nil }},
	{Name: "store-prefix", arg: "PREFIX", Usage: "start of every Redis or memcached key (default \"admit:count:\"; envoyproxy/ratelimit's CACHE_KEY_PREFIX)",
		Set: func(c *RLS, v string) error { c.StorePrefix = v; return nil }},
	{Name: "store-fail", arg: "POLICY", Def: "error", Usage: "what a request gets while the store cannot count: error (gRPC UNAVAILABLE, so Envoy's failure_mode_deny decides), closed (OVER_LIMIT), open (OK) or local (counted in this process's memory)",
		Set: func(c *RLS, v string) (err error) { c.StoreFail, err = parseStoreFail(v, true); return err }},
	{Name: "tls-cert", arg: "FILE", Usage: "TLS certificate (PEM); with --tls-key, serves gRPC over TLS",
		Set: func(c *RLS, v string) error { c.TLSCert = v; return nil }},
	{Name: "tls-key", arg: "FILE", Usage: "TLS private key (PEM)",
		Set: func(c *RLS, v string) error { c.TLSKey = v; return nil }},
	{Name: "client-ca", arg: "FILE", Usage: "CA certificates (PEM): a gRPC client must present a certificate for client authentication that one of them signed, or its connection is refused; needs --tls-cert (envoyproxy/ratelimit's GRPC_CLIENT_TLS_CACERT)",
		Set: func(c *RLS, v string) error { c.ClientCA = v; return nil }},
	{Name: "client-san", arg: "NAME", Usage: "with --client-ca, a name the client's certificate must carry among its DNS names (a wildcard the CA signed matches as in a server's name), or an IP address among its IP addresses; never its common name or URIs (GRPC_CLIENT_TLS_SAN)",
		Set: func(c *RLS, v string) error { c.ClientSAN = v; return nil }},
	{Name: "shadow", Usage: "answer OK overall whatever the limits say (envoyproxy/ratelimit's SHADOW_MODE)",
		Set: func(c *RLS, v string) (err error) { c.Shadow, err = ParseBool(v); return err }},
	{Name: "quota-mode", Usage: "answer OK for over-limit descriptors (QUOTA_MODE)",
		Set: func(c *RLS, v string) (err error) { c.QuotaMode, err = ParseBool(v); return err }},
	{Name: "stop-increment-over-limit", Usage: "when a descriptor of a request would pass its limit, count only the descriptors that would, so that a refused request spends nothing of its other limits; reads the counts first, a second store call a request (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT)",
		Set: func(c *RLS, v string) (err error) { c.StopIncrement, err = ParseBool(v); return err }},
	{Name: "local-cache-bytes", arg: "N", Def: "0", Usage: "memory of the local over-limit cache, which answers a descriptor found over its limit OVER_LIMIT until its window ends without asking the store; at least 512 KiB when on; 0: none (LOCAL_CACHE_SIZE_IN_BYTES)",
		Set: func(c *RLS, v string) (err error) { c.LocalCacheBytes, err = parseCount(v, 0); return err }},
	{Name: "near-limit-ratio", arg: "RATIO", Def: "0.8", Usage: "the share of a limit past which hits count as near_limit in admit_rls_hits_total, above 0 and at most 1 (NEAR_LIMIT_RATIO)",
		Set: func(c *RLS, v string) (err error) { c.NearLimitRatio, err = parseRatio(v); return err }},
	{Name: "response-headers", Usage: "ask Envoy to add the limit headers (LIMIT_RESPONSE_HEADERS_ENABLED)",
		Set: func(c *RLS, v string) (err error) { c.Headers, err = ParseBool(v); return err }},
	{Name: "limit-header", arg: "NAME", Def: rls.DefaultHeaders.Limit, Usage: "name of the limit header (LIMIT_LIMIT_HEADER)",
		Set: func(c *RLS, v string) error { c.LimitHeader = v; return nil }},
	{Name: "remaining-header", arg: "NAME", Def: rls.DefaultHeaders.Remaining, Usage: "name of the remaining header (LIMIT_REMAINING_HEADER)",
		Set: func(c *RLS, v string) error { c.RemainingHdr = v; return nil }},
	{Name: "reset-header", arg: "NAME", Def: rls.DefaultHeaders.Reset, Usage: "name of the reset header (LIMIT_RESET_HEADER)",
		Set: func(c *RLS, v string) error { c.ResetHeader = v; return nil }},
	{Name: "drain-timeout", arg: "DURATION", Def: "10s", Usage: "after SIGTERM, how long calls in flight may finish once the listeners close; then they are cut (envoyproxy/ratelimit waits without a bound)",
		Set: func(c *RLS, v string) (err error) { c.DrainTimeout, err = parseDuration(v, true); return err }},
	{Name: "statsd", arg: "ADDR", Usage: "send the stats /stats shows, under envoyproxy/ratelimit's names, to a statsd server every --statsd-interval (counters as what they grew by, gauges whole): host:port or tcp://host:port (TCP, as the reference sends), or udp://host:port; empty: none (USE_STATSD, STATSD_HOST, STATSD_PORT)",
		Set: func(c *RLS, v string) (err error) { c.Statsd, err = ParseStatsd(v); return err }},
	{Name: "statsd-interval", arg: "DURATION", Def: "10s", Usage: "how often the stats are sent to --statsd, at least 10ms (STATS_FLUSH_INTERVAL)",
		Set: func(c *RLS, v string) (err error) {
			if c.StatsdInterval, err = parseDuration(v, true); err == nil && c.StatsdInterval < minStatsdInterval {
				err = fmt.Errorf("%v is under %v: each flush reads every counter", c.StatsdInterval, minStatsdInterval)
			}
			return err
		}},
	{Name: "stats-tags", arg: "KEY:VALUE,...", Usage: "tags in the name of every stat of /stats and --statsd, as the reference writes them (\".__key=value\"); a value's dots, colons and bars become underscores (EXTRA_TAGS)",
		Set: func(c *RLS, v string) (err error) { c.StatsTags, err = ParseStatTags(v); return err }},
	{Name: "log-level", arg: "LEVEL", Def: "info", Usage: "debug, info, warn or error",
		Set: func(c *RLS, v string) (err error) { c.LogLevel, err = ParseLogLevel(v); return err }},
	{Name: "log-format", arg: "FORMAT", Def: "text", Usage: "text or json",
		Set: func(c *RLS, v string) (err error) { c.LogFormat, err = parseLogFormat(v); return err }},
	{Name: "admin-host", arg: "NAMES", multi: true, Usage: "names the metrics listener answers to besides an IP address, localhost and names under .localhost, comma or space separated; repeatable; a request with any other Host is refused with 421, so that a web page cannot reach it by DNS rebinding",
		Set: func(c *RLS, v string) error { return appendHosts(&c.AdminHosts, v) }},
}

// parseRatio reads a share of a limit: above 0, since package rls takes 0
// for its default, and at most 1. envoyproxy/ratelimit takes any number:
// at 0 every hit within a limit counts as near it, above 1 none does;
// such a value is more likely a mistake than a wish.
func parseRatio(v string) (float64, error) {
	r, err := parseDecimal(v)
	if err != nil || !(r > 0 && r <= 1) {
		return 0, errors.New("want a number above 0 and at most 1")
	}
	return r, nil
}

// PrintRLSUsage writes admit rls's usage.
func PrintRLSUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: admit rls --config FILE|DIR [flags]\n"+
		"       admit rls --xds-server ADDR [flags]\n"+
		"       admit rls validate --config FILE|DIR [flags]   check the flags, environment and files without serving\n"+
		"       admit rls validate --xds-server ADDR [flags]   the same, the configuration not fetched\n\n"+
		"admit rls is Envoy's rate limit service (ShouldRateLimit) on envoyproxy/ratelimit's\n"+
		"configuration files and admit's stores.\n"+
		"Each flag may also be set by the environment variable shown; the flag wins.\n\n")
	PrintOptions(w, RLSOptions)
}
