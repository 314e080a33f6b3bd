package rlsd

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// refVar is one variable of envoyproxy/ratelimit's settings and what admit
// rls does with it in reference mode (see refVars).
type refVar struct {
	name, def string // the variable and the reference's default
	kind      refKind
	// flag is the admit rls flag the variable sets (through refFlags):
	// honoured. "": it sets none.
	flag string
	// also is a second flag the variable sets, for a setting the
	// reference shares between its two Redis (REDIS_TLS_CACERT). "": none.
	also string
	// refuse is the values that ask for something admit lacks: such a
	// value, set, stops startup. The same value as the reference's default,
	// unset, passes with an info line, so that a deployment that never
	// chose it still starts. nil: no value is refused.
	refuse *refusal
	// note says, for a variable without a flag, why it changes nothing
	// here; an info line at startup names each such variable set.
	note string
	// only names the boolean variable without which the reference does
	// not use this one (REDIS_PERSECOND): its values are refused only
	// when that one is true; or, as NAME=VALUE, the value it must have, or
	// have by default (BACKEND_TYPE=redis). "": always.
	only string
}

// refKind is how the reference parses a variable's value.
type refKind uint8

const (
	refText refKind = iota
	refInt
	refBool
	refDuration
	refFloat
	refPairs // key:value,key:value
)

// refusal is a class of values admit lacks the feature for.
type refusal struct {
	when  string // the values, in the docs' words
	test  func(v string) bool
	lacks string // what those values ask for
}

func whenTrue(lacks string) *refusal {
	return &refusal{"true", func(v string) bool { b, _ := strconv.ParseBool(v); return b }, lacks}
}

func whenSet(lacks string) *refusal {
	return &refusal{"set", func(v string) bool { return v != "" }, lacks}
}

// whenNot refuses every value but ok, compared as the reference compares
// it: exactly, or in any case when fold.
func whenNot(lacks string, fold bool, ok ...string) *refusal {
	return &refusal{"other than " + strings.Join(ok, " or "), func(v string) bool {
		for _, o := range ok {
			if v == o || fold && strings.EqualFold(v, o) {
				return false
			}
		}
		return true
	}, lacks}
}

// Notes shared by families of variables.
const (
	noteStats    = "read only with USE_DOG_STATSD or USE_PROMETHEUS, which are refused; admit's metrics are on /metrics of the metrics listener (DEBUG_HOST:DEBUG_PORT)"
	noteXDSRetry = "admit rls waits --xds-retry before a new stream, doubling up to --xds-retry-max, each wait shortened at random by up to a half"
	noteMemcache = "read only with MEMCACHE_TLS=true, which is refused"
	noteTracing  = "read only with TRACING_ENABLED=true, which is refused"
)

// refVars is every variable of envoyproxy/ratelimit's settings, in its
// order: honoured (it sets a flag), refused for some values, or accepted
// with no effect. A test keeps it equal to the reference's settings, and
// docs/rls.md's migration table equal to it.
var refVars = []refVar{
	{name: "HOST", def: "0.0.0.0", flag: "http-listen"},
	{name: "PORT", def: "8080", kind: refInt, flag: "http-listen"},
	{name: "DEBUG_HOST", def: "0.0.0.0", flag: "metrics-listen"},
	{name: "DEBUG_PORT", def: "6070", kind: refInt, flag: "metrics-listen"},
	{name: "GRPC_UDS", refuse: whenSet("a gRPC listener on a Unix socket")},
	{name: "GRPC_HOST", def: "0.0.0.0", flag: "grpc-listen"},
	{name: "GRPC_PORT", def: "8081", kind: refInt, flag: "grpc-listen"},
	{name: "GRPC_MAX_CONNECTION_AGE", def: "24h", kind: refDuration, note: "admit rls closes every connection after 30 minutes, with 10 seconds for the calls in flight"},
	{name: "GRPC_MAX_CONNECTION_AGE_GRACE", def: "1h", kind: refDuration, note: "admit rls closes every connection after 30 minutes, with 10 seconds for the calls in flight"},
	{name: "GRPC_SERVER_USE_TLS", def: "false", kind: refBool, flag: "tls-cert"},
	{name: "GRPC_SERVER_TLS_CERT", flag: "tls-cert"},
	{name: "GRPC_SERVER_TLS_KEY", flag: "tls-key"},
	{name: "GRPC_CLIENT_TLS_CACERT", flag: "client-ca"},
	{name: "GRPC_CLIENT_TLS_SAN", flag: "client-san"},
	{name: "LOG_LEVEL", def: "WARN", flag: "log-level"},
	{name: "LOG_FORMAT", def: "text", flag: "log-format"},
	{name: "CONFIG_TYPE", def: "FILE", flag: "xds-server", refuse: whenNot("configuration from a source other than files and an xDS server", false, "FILE", "GRPC_XDS_SOTW")},
	{name: "FORCE_START_WITHOUT_INITIAL_CONFIG", def: "false", kind: refBool, note: "admit rls serves only once its configuration is loaded, from its files or the xDS server"},
	{name: "CONFIG_GRPC_XDS_NODE_ID", def: "default", flag: "xds-node-id"},
	{name: "CONFIG_GRPC_XDS_NODE_METADATA", flag: "xds-node-metadata"},
	{name: "CONFIG_GRPC_XDS_SERVER_URL", def: "localhost:18000", flag: "xds-server"},
	{name: "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", def: "3s", kind: refDuration, note: noteXDSRetry},
	{name: "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", kind: refPairs, flag: "xds-headers"},
	{name: "CONFIG_GRPC_XDS_SERVER_USE_TLS", def: "false", kind: refBool, flag: "xds-tls"},
	{name: "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", flag: "xds-client-cert"},
	{name: "CONFIG_GRPC_XDS_CLIENT_TLS_KEY", flag: "xds-client-key"},
	{name: "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", flag: "xds-ca"},
	{name: "CONFIG_GRPC_XDS_SERVER_TLS_SAN", flag: "xds-san"},
	{name: "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", def: "10s", kind: refDuration, flag: "xds-retry"},
	{name: "XDS_CLIENT_BACKOFF_MAX_INTERVAL", def: "60s", kind: refDuration, flag: "xds-retry-max"},
	{name: "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", def: "0.5", kind: refFloat, note: noteXDSRetry},
	{name: "XDS_CLIENT_BACKOFF_JITTER", def: "true", kind: refBool, note: noteXDSRetry},
	{name: "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", kind: refInt, flag: "xds-max-msg-bytes"},
	{name: "USE_DOG_STATSD", def: "false", kind: refBool, refuse: whenTrue("DogStatsD")},
	{name: "USE_DOG_STATSD_MOGRIFIERS", note: noteStats},
	{name: "USE_STATSD", def: "true", kind: refBool, flag: "statsd"},
	{name: "STATSD_HOST", def: "localhost", flag: "statsd"},
	{name: "STATSD_PORT", def: "8125", kind: refInt, flag: "statsd"},
	{name: "EXTRA_TAGS", kind: refPairs, flag: "stats-tags"},
	{name: "STATS_FLUSH_INTERVAL", def: "10s", kind: refDuration, flag: "statsd-interval"},
	{name: "DISABLE_STATS", def: "false", kind: refBool, flag: "statsd"},
	{name: "USE_PROMETHEUS", def: "false", kind: refBool, refuse: whenTrue("the reference's Prometheus listener and metric names (admit's are on DEBUG_HOST:DEBUG_PORT/metrics)")},
	{name: "PROMETHEUS_ADDR", def: ":9090", note: noteStats},
	{name: "PROMETHEUS_PATH", def: "/metrics", note: noteStats},
	{name: "PROMETHEUS_MAPPER_YAML", note: noteStats},
	{name: "RUNTIME_ROOT", def: "/srv/runtime_data/current", flag: "config"},
	{name: "RUNTIME_SUBDIRECTORY", flag: "config"},
	{name: "RUNTIME_APPDIRECTORY", def: "config", flag: "config"},
	{name: "RUNTIME_IGNOREDOTFILES", def: "false", kind: refBool, note: "admit rls always leaves out files and directories whose names start with a dot"},
	{name: "RUNTIME_WATCH_ROOT", def: "true", kind: refBool, note: "admit rls looks at every file under the configuration directory every second, and reloads on SIGHUP"},
	{name: "EXPIRATION_JITTER_MAX_SECONDS", def: "300", kind: refInt, note: "admit's counters expire with their window"},
	{name: "LOCAL_CACHE_SIZE_IN_BYTES", def: "0", kind: refInt, flag: "local-cache-bytes"},
	{name: "NEAR_LIMIT_RATIO", def: "0.8", kind: refFloat, flag: "near-limit-ratio"},
	{name: "CACHE_KEY_PREFIX", flag: "store-prefix"},
	{name: "BACKEND_TYPE", def: "redis", flag: "store", refuse: whenNot("a store other than Redis or memcached", false, "redis", "memcache")},
	{name: "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", def: "false", kind: refBool, flag: "stop-increment-over-limit"},
	{name: "LIMIT_RESPONSE_HEADERS_ENABLED", def: "false", kind: refBool, flag: "response-headers"},
	{name: "LIMIT_LIMIT_HEADER", def: "RateLimit-Limit", flag: "limit-header"},
	{name: "LIMIT_REMAINING_HEADER", def: "RateLimit-Remaining", flag: "remaining-header"},
	{name: "LIMIT_RESET_HEADER", def: "RateLimit-Reset", flag: "reset-header"},
	{name: "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", def: "false", kind: refBool, note: "admit rls serves only once its configuration is loaded"},
	{name: "REDIS_SOCKET_TYPE", def: "unix", flag: "store", only: "BACKEND_TYPE=redis", refuse: whenNot("Redis over a Unix socket", false, "tcp")},
	{name: "REDIS_TYPE", def: "SINGLE", flag: "store", only: "BACKEND_TYPE=redis", refuse: whenNot("a Redis topology other than single, cluster or sentinel", true, "single", "cluster", "sentinel")},
	{name: "REDIS_URL", def: "/var/run/nutcracker/ratelimit.sock", flag: "store"},
	{name: "REDIS_POOL_SIZE", def: "10", kind: refInt, flag: "store"},
	{name: "REDIS_AUTH", flag: "store"},
	{name: "REDIS_TLS", def: "false", kind: refBool, flag: "store"},
	{name: "REDIS_TLS_CLIENT_CERT", flag: "store", also: "per-second-store"},
	{name: "REDIS_TLS_CLIENT_KEY", flag: "store", also: "per-second-store"},
	{name: "REDIS_TLS_CACERT", flag: "store", also: "per-second-store"},
	// Refused, not followed: the reference then checks the server's
	// certificate against the CA (the system's roots without
	// REDIS_TLS_CACERT) and not against the name Redis is dialled by, so
	// that any certificate the CA issued to anyone, for any host, passes
	// for the Redis server, and whoever holds one can stand in for it. The
	// remedy is a server certificate that names that host or address.
	{name: "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", def: "false", kind: refBool, refuse: whenTrue("Redis TLS without hostname verification")},
	{name: "REDIS_PIPELINE_WINDOW", def: "0", kind: refDuration, note: "admit batches the calls that arrive together by itself"},
	{name: "REDIS_PIPELINE_LIMIT", def: "0", kind: refInt, note: "admit batches the calls that arrive together by itself"},
	{name: "REDIS_PERSECOND", def: "false", kind: refBool, flag: "per-second-store"},
	{name: "REDIS_PERSECOND_SOCKET_TYPE", def: "unix", flag: "per-second-store", only: "REDIS_PERSECOND", refuse: whenNot("Redis over a Unix socket", false, "tcp")},
	{name: "REDIS_PERSECOND_TYPE", def: "SINGLE", flag: "per-second-store", only: "REDIS_PERSECOND", refuse: whenNot("a Redis topology other than single, cluster or sentinel", true, "single", "cluster", "sentinel")},
	{name: "REDIS_PERSECOND_URL", def: "/var/run/nutcracker/ratelimitpersecond.sock", flag: "per-second-store"},
	{name: "REDIS_PERSECOND_POOL_SIZE", def: "10", kind: refInt, flag: "per-second-store"},
	{name: "REDIS_PERSECOND_AUTH", flag: "per-second-store"},
	{name: "REDIS_PERSECOND_TLS", def: "false", kind: refBool, flag: "per-second-store"},
	{name: "REDIS_SENTINEL_AUTH", flag: "store"},
	{name: "REDIS_PERSECOND_SENTINEL_AUTH", flag: "per-second-store"},
	{name: "REDIS_PERSECOND_PIPELINE_WINDOW", def: "0", kind: refDuration, note: "admit batches the calls that arrive together by itself"},
	{name: "REDIS_PERSECOND_PIPELINE_LIMIT", def: "0", kind: refInt, note: "admit batches the calls that arrive together by itself"},
	{name: "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", def: "false", kind: refBool, note: "a Redis that fails is answered by --store-fail, not by the health check"},
	{name: "REDIS_TIMEOUT", def: "10s", kind: refDuration, flag: "store"},
	{name: "REDIS_PERSECOND_TIMEOUT", def: "10s", kind: refDuration, flag: "per-second-store"},
	{name: "REDIS_POOL_ON_EMPTY_BEHAVIOR", def: "WAIT", note: "a call waits for a pooled connection, as with WAIT"},
	{name: "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR", def: "WAIT", note: "a call waits for a pooled connection, as with WAIT"},
	{name: "MEMCACHE_HOST_PORT", flag: "store"},
	{name: "MEMCACHE_MAX_IDLE_CONNS", def: "2", kind: refInt, flag: "store"},
	{name: "MEMCACHE_SRV", refuse: whenSet("memcached servers found by DNS SRV records")},
	{name: "MEMCACHE_SRV_REFRESH", def: "0", kind: refDuration, note: "read only with MEMCACHE_SRV, which is refused"},
	{name: "MEMCACHE_TLS", def: "false", kind: refBool, refuse: whenTrue("memcached over TLS")},
	{name: "MEMCACHE_TLS_CLIENT_CERT", note: noteMemcache},
	{name: "MEMCACHE_TLS_CLIENT_KEY", note: noteMemcache},
	{name: "MEMCACHE_TLS_CACERT", note: noteMemcache},
	{name: "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION", def: "false", kind: refBool, note: noteMemcache},
	{name: "SHADOW_MODE", def: "false", kind: refBool, flag: "shadow"},
	{name: "QUOTA_MODE", def: "false", kind: refBool, flag: "quota-mode"},
	{name: "RESPONSE_DYNAMIC_METADATA", def: "false", kind: refBool, refuse: whenTrue("dynamic metadata in the answer")},
	{name: "MERGE_DOMAIN_CONFIG", def: "false", kind: refBool, refuse: whenTrue("a domain configured by several files")},
	{name: "TRACING_ENABLED", def: "false", kind: refBool, refuse: whenTrue("OpenTelemetry traces")},
	{name: "TRACING_SERVICE_NAME", def: "RateLimit", note: noteTracing},
	{name: "TRACING_SERVICE_NAMESPACE", note: noteTracing},
	{name: "TRACING_SERVICE_INSTANCE_ID", note: noteTracing},
	{name: "TRACING_EXPORTER_PROTOCOL", def: "http", note: noteTracing},
	{name: "TRACING_SAMPLING_RATE", def: "1", kind: refFloat, note: noteTracing},
}

// check parses a value as the reference does, and refuses one that asks
// for what admit lacks; v is "" when the variable is unset.
func (r refVar) check(v string, getenv func(string) string) error {
	if v == "" {
		return nil
	}
	var err error
	switch r.kind {
	case refInt:
		_, err = strconv.Atoi(v)
	case refBool:
		_, err = strconv.ParseBool(v)
	case refDuration:
		_, err = time.ParseDuration(v)
	case refFloat:
		_, err = strconv.ParseFloat(v, 64)
	case refPairs:
		for p := range strings.SplitSeq(v, ",") {
			if !strings.Contains(p, ":") {
				err = fmt.Errorf("%q is not key:value", p)
			}
		}
	}
	if err != nil && r.kind == refPairs {
		// A list of pairs may carry a credential (the xDS stream's
		// headers): it is named, never shown.
		return fmt.Errorf("admit rls: %s (not shown): not %s", r.name, kindWords[r.kind])
	}
	if err != nil {
		return fmt.Errorf("admit rls: %s %q: not %s", r.name, v, kindWords[r.kind])
	}
	if r.refuses(v, getenv) {
		return fmt.Errorf("admit rls: %s %q: asks for %s, which admit rls lacks (see docs/rls.md)", r.name, v, r.refuse.lacks)
	}
	return nil
}

// refuses reports whether v, the variable's value or default, asks for
// what admit lacks, when the reference uses the variable at all.
func (r refVar) refuses(v string, getenv func(string) string) bool {
	if r.refuse == nil || !r.refuse.test(v) {
		return false
	}
	if name, want, ok := strings.Cut(r.only, "="); ok {
		return refValue(name, getenv) == want
	}
	on, _ := strconv.ParseBool(getenv(r.only))
	return r.only == "" || on
}

// refValue is the reference's variable name as it reads it: its value,
// else its default.
func refValue(name string, getenv func(string) string) string {
	if v := getenv(name); v != "" {
		return v
	}
	for _, r := range refVars {
		if r.name == name {
			return r.def
		}
	}
	return ""
}

var kindWords = map[refKind]string{refInt: "a whole number", refBool: "a boolean (true or false)",
	refDuration: "a duration (such as 10s)", refFloat: "a number", refPairs: "a list of key:value pairs"}

// effect says what admit rls does with the variable, in docs/rls.md's words.
func (r refVar) effect() string {
	var s string
	switch {
	case r.also != "":
		s = "honoured: `--" + r.flag + "`, `--" + r.also + "`"
	case r.flag != "":
		s = "honoured: `--" + r.flag + "`"
	case r.refuse == nil:
		s = "no effect: " + r.note
	}
	if r.refuse != nil {
		if s != "" {
			s += "; "
		}
		switch {
		case strings.Contains(r.only, "="):
			s += "with " + r.only + ", "
		case r.only != "":
			s += "with " + r.only + "=true, "
		}
		s += "refused when " + r.refuse.when + ": " + r.refuse.lacks
	}
	return s
}

// docRow is the variable's row in docs/rls.md's migration table.
func (r refVar) docRow() string {
	def := "(empty)"
	if r.def != "" {
		def = "`" + r.def + "`"
	}
	return fmt.Sprintf("| `%s` | %s | %s |", r.name, def, r.effect())
}
