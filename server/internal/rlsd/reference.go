package rlsd

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/admitgo/admit/server/internal/config"
)

// The values of --env: admit reads only its own variables; envoy reads
// envoyproxy/ratelimit's too, below admit's (see refVars).
const (
	envAdmit     = config.EnvAdmit
	envReference = config.EnvReference
)

// refFlags makes the value of each flag the reference's variables set
// from those variables, each one its default where unset.
var refFlags = map[string]func(get func(string) string) (string, error){
	"grpc-listen": func(get func(string) string) (string, error) {
		return net.JoinHostPort(get("GRPC_HOST"), get("GRPC_PORT")), nil
	},
	"http-listen": func(get func(string) string) (string, error) { return net.JoinHostPort(get("HOST"), get("PORT")), nil },
	"metrics-listen": func(get func(string) string) (string, error) {
		return net.JoinHostPort(get("DEBUG_HOST"), get("DEBUG_PORT")), nil
	},
	"config": func(get func(string) string) (string, error) {
		if refXDS(get) {
			return "", nil
		}
		return filepath.Join(get("RUNTIME_ROOT"), get("RUNTIME_SUBDIRECTORY"), get("RUNTIME_APPDIRECTORY")), nil
	},
	// The xDS settings, read when CONFIG_TYPE asks for an xDS server; the
	// TLS files only with CONFIG_GRPC_XDS_SERVER_USE_TLS, as there.
	"xds-server": func(get func(string) string) (string, error) {
		if !refXDS(get) {
			return "", nil
		}
		return get("CONFIG_GRPC_XDS_SERVER_URL"), nil
	},
	"xds-node-id":       refSame("CONFIG_GRPC_XDS_NODE_ID"),
	"xds-node-metadata": refSame("CONFIG_GRPC_XDS_NODE_METADATA"),
	"xds-headers":       refSame("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS"),
	"xds-tls":           refSame("CONFIG_GRPC_XDS_SERVER_USE_TLS"),
	"xds-ca":            refXDSTLS("CONFIG_GRPC_XDS_SERVER_TLS_CACERT"),
	"xds-san":           refXDSTLS("CONFIG_GRPC_XDS_SERVER_TLS_SAN"),
	"xds-client-cert":   refXDSTLS("CONFIG_GRPC_XDS_CLIENT_TLS_CERT"),
	"xds-client-key":    refXDSTLS("CONFIG_GRPC_XDS_CLIENT_TLS_KEY"),
	"xds-retry":         refSame("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL"),
	"xds-retry-max":     refSame("XDS_CLIENT_BACKOFF_MAX_INTERVAL"),
	"xds-max-msg-bytes": func(get func(string) string) (string, error) {
		// Unset or 0: gRPC's default there.
		if v := get("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES"); v != "" && v != "0" {
			return v, nil
		}
		return "4194304", nil
	},
	"store":            refMainStore,
	"per-second-store": refPerSecondStore,
	"store-prefix":     refSame("CACHE_KEY_PREFIX"),
	"log-level":        refLogLevel,
	"log-format": func(get func(string) string) (string, error) {
		if strings.EqualFold(get("LOG_FORMAT"), "json") { // anything else is text there
			return "json", nil
		}
		return "text", nil
	},
	// The reference reads its certificate only with GRPC_SERVER_USE_TLS.
	"tls-cert": refTLS("GRPC_SERVER_TLS_CERT"),
	"tls-key":  refTLS("GRPC_SERVER_TLS_KEY"),
	// Read whether or not GRPC_SERVER_USE_TLS is: without TLS, a CA set
	// is refused (check) rather than ignored as the reference ignores it.
	"client-ca":                 refSame("GRPC_CLIENT_TLS_CACERT"),
	"client-san":                refSame("GRPC_CLIENT_TLS_SAN"),
	"shadow":                    refSame("SHADOW_MODE"),
	"quota-mode":                refSame("QUOTA_MODE"),
	"stop-increment-over-limit": refSame("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT"),
	"local-cache-bytes":         refSame("LOCAL_CACHE_SIZE_IN_BYTES"),
	"near-limit-ratio":          refSame("NEAR_LIMIT_RATIO"),
	"response-headers":          refSame("LIMIT_RESPONSE_HEADERS_ENABLED"),
	"statsd":                    refStatsd,
	"statsd-interval":           refSame("STATS_FLUSH_INTERVAL"),
	"stats-tags":                refSame("EXTRA_TAGS"),
	"limit-header":              refSame("LIMIT_LIMIT_HEADER"),
	"remaining-header":          refSame("LIMIT_REMAINING_HEADER"),
	"reset-header":              refSame("LIMIT_RESET_HEADER"),
}

// refXDS reports whether CONFIG_TYPE asks for an xDS server.
func refXDS(get func(string) string) bool { return get("CONFIG_TYPE") == "GRPC_XDS_SOTW" }

// refXDSTLS reads the xDS TLS file or name variable name with
// CONFIG_GRPC_XDS_SERVER_USE_TLS; without it the reference ignores it.
func refXDSTLS(name string) func(func(string) string) (string, error) {
	return func(get func(string) string) (string, error) {
		if on, _ := strconv.ParseBool(get("CONFIG_GRPC_XDS_SERVER_USE_TLS")); !on {
			return "", nil
		}
		return get(name), nil
	}
}

func refSame(name string) func(func(string) string) (string, error) {
	return func(get func(string) string) (string, error) { return get(name), nil }
}

// refTLS reads the certificate or key variable name when
// GRPC_SERVER_USE_TLS asks for TLS; asked for without it, startup is
// refused rather than serving cleartext where TLS was meant.
func refTLS(name string) func(func(string) string) (string, error) {
	return func(get func(string) string) (string, error) {
		on, _ := strconv.ParseBool(get("GRPC_SERVER_USE_TLS"))
		if !on {
			return "", nil
		}
		if get(name) == "" {
			return "", fmt.Errorf("admit rls: GRPC_SERVER_USE_TLS %q asks for TLS, and %s is not set", get("GRPC_SERVER_USE_TLS"), name)
		}
		return get(name), nil
	}
}

// refStatsd is where the reference sends its stats: to STATSD_HOST and
// STATSD_PORT over TCP with USE_STATSD, its default, unless DISABLE_STATS.
func refStatsd(get func(string) string) (string, error) {
	if off, _ := strconv.ParseBool(get("DISABLE_STATS")); off {
		return "", nil
	}
	if on, _ := strconv.ParseBool(get("USE_STATSD")); !on {
		return "", nil
	}
	return "tcp://" + net.JoinHostPort(get("STATSD_HOST"), get("STATSD_PORT")), nil
}

// refLogLevel maps logrus's levels, the reference's, onto slog's.
func refLogLevel(get func(string) string) (string, error) {
	switch v := get("LOG_LEVEL"); strings.ToLower(v) {
	case "trace", "debug":
		return "debug", nil
	case "info":
		return "info", nil
	case "warn", "warning":
		return "warn", nil
	case "error", "fatal", "panic":
		return "error", nil
	default:
		return "", fmt.Errorf("admit rls: LOG_LEVEL %q: want trace, debug, info, warn, error, fatal or panic", v)
	}
}

// refPerSecondStore is the store URL of the reference's per-second Redis,
// its REDIS_PERSECOND_ variables read as refStore reads REDIS_'s, when
// REDIS_PERSECOND is true; else none. Their rows refuse, with
// REDIS_PERSECOND on, what refStore's rows refuse for the main Redis.
func refPerSecondStore(get func(string) string) (string, error) {
	if on, _ := strconv.ParseBool(get("REDIS_PERSECOND")); !on || get("BACKEND_TYPE") == "memcache" {
		return "", nil
	}
	return refStore("REDIS_PERSECOND_")(get)
}

// refMainStore is the store URL of BACKEND_TYPE: with memcache, the
// memcached servers of MEMCACHE_HOST_PORT (comma separated host:port) and
// MEMCACHE_MAX_IDLE_CONNS (0 or less: the client's default, 2 there);
// else the Redis of refStore.
func refMainStore(get func(string) string) (string, error) {
	if get("BACKEND_TYPE") != "memcache" {
		return refStore("REDIS_")(get)
	}
	hosts := get("MEMCACHE_HOST_PORT")
	if hosts == "" {
		return "", fmt.Errorf("admit rls: BACKEND_TYPE %q needs MEMCACHE_HOST_PORT, the memcached servers as host:port, comma separated (MEMCACHE_SRV is refused)", get("BACKEND_TYPE"))
	}
	u := "memcache://" + hosts
	if n, _ := strconv.Atoi(get("MEMCACHE_MAX_IDLE_CONNS")); n > 0 {
		u += "?max_idle_conns=" + strconv.Itoa(n)
	}
	return u, nil
}

// refStore is the store URL of the reference's Redis settings of prefix
// (REDIS_, or REDIS_PERSECOND_): URL is host:port, or for a cluster its
// nodes, or for Sentinel the master's name and the sentinels, comma
// separated; AUTH is a password or user:password (the master's, under
// Sentinel), SENTINEL_AUTH the sentinels'. BACKEND_TYPE and
// REDIS_SOCKET_TYPE other than redis and tcp are refused by their rows.
func refStore(prefix string) func(get func(string) string) (string, error) {
	return func(get func(string) string) (string, error) {
		return redisURL(func(name string) string { return get(prefix + name) }, prefix, refTLSFiles(get))
	}
}

// refTLSFiles are the store URL parameters of the TLS files the reference
// reads for both of its Redis, each used with TLS only: the client
// certificate and key (which the reference ignores unless both are set,
// and admit refuses one without the other) and the certificate authority.
func refTLSFiles(get func(string) string) url.Values {
	q := url.Values{}
	for param, name := range map[string]string{"sslcert": "REDIS_TLS_CLIENT_CERT", "sslkey": "REDIS_TLS_CLIENT_KEY", "sslrootcert": "REDIS_TLS_CACERT"} {
		if v := get(name); v != "" {
			q.Set(param, v)
		}
	}
	return q
}

// redisURL is refStore's URL, get reading the variables without their
// prefix; files are its TLS parameters, added when its TLS is on.
func redisURL(get func(string) string, prefix string, files url.Values) (string, error) {
	u := url.URL{Scheme: "redis"}
	q := url.Values{}
	if on, _ := strconv.ParseBool(get("TLS")); on {
		u.Scheme = "rediss"
		maps.Copy(q, files)
	}
	q.Set("pool_size", get("POOL_SIZE"))
	q.Set("dial_timeout", get("TIMEOUT"))
	userinfo := func(auth string) *url.Userinfo {
		if auth == "" {
			return nil
		}
		if user, pass, ok := strings.Cut(auth, ":"); ok {
			return url.UserPassword(user, pass)
		}
		return url.UserPassword("", auth)
	}
	addrs := strings.Split(get("URL"), ",")
	switch strings.ToLower(get("TYPE")) {
	case "cluster":
		u.Scheme += "+cluster"
	case "sentinel":
		if len(addrs) < 2 {
			return "", fmt.Errorf("admit rls: %sURL %q: with %sTYPE sentinel, want the master's name and the sentinels, comma separated", prefix, get("URL"), prefix)
		}
		u.Scheme += "+sentinel"
		q.Set("master_name", addrs[0])
		addrs = addrs[1:]
		if auth := get("AUTH"); auth != "" {
			if user, pass, ok := strings.Cut(auth, ":"); ok {
				q.Set("username", user)
				auth = pass
			}
			q.Set("password", auth)
		}
		u.User = userinfo(get("SENTINEL_AUTH"))
	default:
		if len(addrs) > 1 {
			return "", fmt.Errorf("admit rls: %sURL %q: with %sTYPE single, want one host:port", prefix, get("URL"), prefix)
		}
	}
	if u.User == nil && !strings.Contains(u.Scheme, "sentinel") {
		u.User = userinfo(get("AUTH"))
	}
	u.Host = addrs[0]
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// applyReference returns the value of each flag in refFlags that neither
// the command line nor an ADMIT_RLS_ variable gives (given says which do,
// and by which spelling) from the reference's variables, each naming the
// variables it came from. It refuses a value that asks for what admit
// lacks, and returns an info line for each variable set that changes
// nothing, and for each default of the reference that admit does not
// follow.
func applyReference(given func(flag string) (spelling string, ok bool), getenv func(string) string) (below map[string]config.Value, infos []string, err error) {
	defs := map[string]string{}
	names := map[string][]string{}
	for _, r := range refVars {
		defs[r.name] = r.def
		v := getenv(r.name)
		spelling, set := "", false
		if r.flag != "" {
			spelling, set = given(r.flag)
		}
		if r.also != "" {
			_, alsoSet := given(r.also)
			set = set && alsoSet // read while either flag is not given
			names[r.also] = append(names[r.also], r.name)
		}
		switch {
		case set:
			if v != "" {
				infos = append(infos, fmt.Sprintf("%s is not read: --%s or %s is given", r.name, spelling, envName(spelling)))
			}
			continue
		case r.flag != "":
			names[r.flag] = append(names[r.flag], r.name)
			if err := r.check(v, getenv); err != nil {
				return nil, nil, err
			}
			// The default flows into the flag: refused like a value set.
			if v == "" && r.refuses(r.def, getenv) {
				return nil, nil, fmt.Errorf("admit rls: %s unset: the reference's default %q asks for %s, which admit rls lacks; set %s (see docs/rls.md)",
					r.name, r.def, r.refuse.lacks, r.name)
			}
		default:
			if err := r.check(v, getenv); err != nil {
				return nil, nil, err
			}
			switch {
			case v != "" && r.refuse == nil:
				infos = append(infos, fmt.Sprintf("%s has no effect: %s", r.name, r.note))
			case v == "" && r.refuse != nil && r.refuse.test(r.def):
				infos = append(infos, fmt.Sprintf("%s unset: the reference's default %s asks for %s, which admit rls lacks; passed over, since it was not chosen (set to %s, it is refused)",
					r.name, r.def, r.refuse.lacks, r.def))
			}
		}
	}
	get := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return defs[name]
	}
	below = map[string]config.Value{}
	for _, f := range slices.Sorted(maps.Keys(refFlags)) {
		if _, set := given(f); set {
			continue
		}
		v, err := refFlags[f](get)
		if err != nil {
			return nil, nil, err
		}
		below[f] = config.Value{V: v, From: strings.Join(names[f], ", ")}
	}
	return below, infos, nil
}
