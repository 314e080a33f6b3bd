package rlsd

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testcert"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// referenceEnv returns a getenv of env in reference mode.
func referenceEnv(env map[string]string) func(string) string {
	return func(k string) string {
		if k == "ADMIT_RLS_ENV" {
			return envReference
		}
		return env[k]
	}
}

// TestRLSReferenceTableCoversSettings checks that refVars has one row for
// each variable of envoyproxy/ratelimit's settings (testdata, which the
// reference module's test keeps equal to its source) and no other.
func TestRLSReferenceTableCoversSettings(t *testing.T) {
	data, err := os.ReadFile("testdata/envoy-ratelimit-settings.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(data))
	var got []string
	for _, r := range refVars {
		got = append(got, r.name)
		if (r.flag == "") == (r.note == "") && r.refuse == nil {
			t.Errorf("%s: a row has a flag or a note, not both", r.name)
		}
		if r.flag != "" && refFlags[r.flag] == nil {
			t.Errorf("%s: flag %q has no way from the variables to a value", r.name, r.flag)
		}
		if err := r.check(r.def, func(string) string { return "" }); err != nil && (r.refuse == nil || !r.refuse.test(r.def)) {
			t.Errorf("%s: its default %q: %v", r.name, r.def, err)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n got %q\nwant %q (the reference's settings, in order)", got, want)
	}
}

// TestRLSReferenceRefused stops startup for each value that asks for
// something admit lacks, naming the variable and its value; the same
// values are not read outside reference mode.
func TestRLSReferenceRefused(t *testing.T) {
	base := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:6379"}
	for _, tc := range []struct{ name, value, want string }{
		{"REDIS_PERSECOND", "true", `REDIS_PERSECOND_SOCKET_TYPE unset: the reference's default "unix" asks for Redis over a Unix socket`},
		{"LOCAL_CACHE_SIZE_IN_BYTES", "-1", `LOCAL_CACHE_SIZE_IN_BYTES "-1": must be at least 0`},
		{"LOCAL_CACHE_SIZE_IN_BYTES", "1MB", `LOCAL_CACHE_SIZE_IN_BYTES "1MB": not a whole number`},
		{"BACKEND_TYPE", "memcached", `BACKEND_TYPE "memcached": asks for a store other than Redis or memcached`},
		{"BACKEND_TYPE", "memcache", `BACKEND_TYPE "memcache" needs MEMCACHE_HOST_PORT`},
		{"MEMCACHE_SRV", "_memcache._tcp.example", `MEMCACHE_SRV "_memcache._tcp.example": asks for memcached servers found by DNS SRV records`},
		{"MEMCACHE_TLS", "true", `MEMCACHE_TLS "true": asks for memcached over TLS`},
		{"CONFIG_TYPE", "GRPC_XDS_DELTA", `CONFIG_TYPE "GRPC_XDS_DELTA": asks for configuration from a source other than files and an xDS server`},
		{"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "ca.pem", ""}, // read only with CONFIG_TYPE=GRPC_XDS_SOTW: refused below
		{"USE_PROMETHEUS", "1", `USE_PROMETHEUS "1": asks for the reference's Prometheus`},
		{"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "yes", `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT "yes": not a boolean`},
		// A list of pairs may hold a token: named, not shown.
		{"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "authorization:Bearer SECRET1,bad", "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS (not shown): not a list of key:value pairs"},
		{"REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "true", `REDIS_TLS_SKIP_HOSTNAME_VERIFICATION "true": asks for Redis TLS without hostname verification`},
		{"GRPC_CLIENT_TLS_CACERT", "ca.pem", `GRPC_CLIENT_TLS_CACERT is set but --tls-cert (ADMIT_RLS_TLS_CERT) is not`},
		{"GRPC_CLIENT_TLS_SAN", "envoy.mesh", `GRPC_CLIENT_TLS_SAN is set but --client-ca (ADMIT_RLS_CLIENT_CA) is not`},
		{"REDIS_SOCKET_TYPE", "unix", `REDIS_SOCKET_TYPE "unix": asks for Redis over a Unix socket`},
		{"REDIS_TYPE", "ring", `REDIS_TYPE "ring": asks for`},
		{"GRPC_PORT", "http", `GRPC_PORT "http": not a whole number`},
		{"SHADOW_MODE", "maybe", `SHADOW_MODE "maybe": not a boolean`},
		{"REDIS_TIMEOUT", "10", `REDIS_TIMEOUT "10": not a duration`},
		{"LOG_LEVEL", "loud", `LOG_LEVEL "loud": want trace, debug`},
		{"GRPC_SERVER_USE_TLS", "true", `GRPC_SERVER_USE_TLS "true" asks for TLS, and GRPC_SERVER_TLS_CERT is not set`},
		{"REDIS_URL", "a:1,b:2", `REDIS_URL "a:1,b:2": with REDIS_TYPE single, want one host:port`},
	} {
		env := map[string]string{tc.name: tc.value}
		for k, v := range base {
			if _, ok := env[k]; !ok {
				env[k] = v
			}
		}
		if tc.want == "" {
			continue
		}
		err := Run(context.Background(), nil, referenceEnv(env), io.Discard, io.Discard)
		if code := config.ExitCode(err); code != 2 || !strings.Contains(err.Error(), "admit rls: "+tc.want) {
			t.Errorf("%s=%s: exit %d, %v; want exit 2 and %q", tc.name, tc.value, code, err, tc.want)
		}
		if strings.Contains(tc.value, "SECRET") && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error shows the value: %v", tc.name, err)
		}
	}
	// The per-second Redis's variables are read, and refused, only with
	// REDIS_PERSECOND.
	perSecond := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "r:6379", "REDIS_PERSECOND": "true",
		"REDIS_PERSECOND_SOCKET_TYPE": "tcp", "REDIS_PERSECOND_URL": "s:6379", "REDIS_PERSECOND_TYPE": "ring"}
	if _, err := parseFlags(nil, referenceEnv(perSecond), io.Discard); err == nil || !strings.Contains(err.Error(), `REDIS_PERSECOND_TYPE "ring": asks for a Redis topology other than single, cluster or sentinel`) {
		t.Errorf("REDIS_PERSECOND_TYPE=ring: got %v, want refused", err)
	}
	perSecond["REDIS_PERSECOND"] = "false"
	if o, err := parseFlags(nil, referenceEnv(perSecond), io.Discard); err != nil || o.PerSecondStore.Kind != "" {
		t.Errorf("REDIS_PERSECOND=false: got %q, %v; want no per-second store", o.PerSecondStore.Kind, err)
	}
	// The default socket type is refused as the store it names.
	if _, err := parseFlags(nil, referenceEnv(map[string]string{}), io.Discard); err == nil || !strings.Contains(err.Error(), `REDIS_SOCKET_TYPE unset: the reference's default "unix" asks for Redis over a Unix socket`) {
		t.Errorf("no REDIS_SOCKET_TYPE: got %v, want the default refused", err)
	}
	// Given the store, the reference's Redis variables are not read.
	if o, err := parseFlags([]string{"--store", "memory"}, referenceEnv(map[string]string{}), io.Discard); err != nil || o.Store.Kind != storeurl.Memory {
		t.Errorf("--store memory: got %q, %v; want memory", o.Store.Kind, err)
	}
	// Outside reference mode nothing of the reference's is read, and
	// each one set is reported.
	o, err := parseFlags([]string{"--config", "x"}, func(k string) string { return map[string]string{"REDIS_PERSECOND": "true", "PORT": "1"}[k] }, io.Discard)
	if err != nil || o.HTTPListen != "" || !slices.Equal(o.referenceEnv, []string{"PORT", "REDIS_PERSECOND"}) {
		t.Errorf("admit mode: got %v, http-listen %q, reported %q; want no error, no HTTP listener, PORT and REDIS_PERSECOND reported", err, o.HTTPListen, o.referenceEnv)
	}
}

// TestRLSReferenceDefaults reads the reference's defaults where its
// variables are unset, and passes the defaults admit does not follow with
// an info line.
func TestRLSReferenceDefaults(t *testing.T) {
	o, err := parseFlags(nil, referenceEnv(map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379", "STATSD_PORT": "9125"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"listen", o.GRPCListen, "0.0.0.0:8081"},
		{"http-listen", o.HTTPListen, "0.0.0.0:8080"},
		{"metrics-listen", o.MetricsListen, "0.0.0.0:6070"},
		{"config", o.Config, filepath.Join("/srv/runtime_data/current", "config")},
		{"store", o.Store.URL, "redis://redis:6379?dial_timeout=10s&pool_size=10"},
		{"log-level", o.LogLevel.String(), "WARN"},
		{"log-format", o.LogFormat, "text"},
		{"limit-header", o.LimitHeader, "RateLimit-Limit"},
		// USE_STATSD's default is true: the stats go to STATSD_HOST over TCP.
		{"statsd", o.Statsd.String(), "tcp://localhost:9125"},
		{"statsd-interval", o.StatsdInterval.String(), "10s"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if infos := strings.Join(o.infos, "\n"); strings.Contains(infos, "STATSD") {
		t.Errorf("info lines pass statsd over, which is honoured:\n%s", infos)
	}
}

// TestRLSReferenceStatsd sends the stats where the reference sends them,
// and nowhere when its variables turn them off; EXTRA_TAGS tags them.
func TestRLSReferenceStatsd(t *testing.T) {
	base := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379"}
	for _, tc := range []struct {
		env        map[string]string
		statsd     string
		tags       config.StatTags
		intervalIs string
	}{
		{map[string]string{}, "tcp://localhost:8125", "", "10s"},
		{map[string]string{"STATSD_HOST": "stats.internal", "STATSD_PORT": "9125", "STATS_FLUSH_INTERVAL": "1s", "EXTRA_TAGS": "zone:eu.west,app:edge"},
			"tcp://stats.internal:9125", ".__app=edge.__zone=eu_west", "1s"},
		{map[string]string{"USE_STATSD": "false"}, "", "", "10s"},
		{map[string]string{"DISABLE_STATS": "true"}, "", "", "10s"},
	} {
		env := maps.Clone(base)
		maps.Copy(env, tc.env)
		o, err := parseFlags(nil, referenceEnv(env), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if o.Statsd.String() != tc.statsd || o.StatsTags != tc.tags || o.StatsdInterval.String() != tc.intervalIs {
			t.Errorf("%v: statsd %q, tags %q, interval %v; want %q, %q, %s", tc.env, o.Statsd, o.StatsTags, o.StatsdInterval, tc.statsd, tc.tags, tc.intervalIs)
		}
	}
	env := maps.Clone(base)
	env["EXTRA_TAGS"] = "a b:c"
	if _, err := parseFlags(nil, referenceEnv(env), io.Discard); err == nil || !strings.Contains(err.Error(), "EXTRA_TAGS") {
		t.Errorf("EXTRA_TAGS with a space in a key: %v, want an error naming EXTRA_TAGS", err)
	}
}

// TestRLSReferencePrecedence takes a flag first, then its ADMIT_RLS_
// variable, then the reference's variables, then the reference's default.
func TestRLSReferencePrecedence(t *testing.T) {
	env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379",
		"GRPC_HOST": "127.0.0.2", "GRPC_PORT": "9001", "ADMIT_RLS_LISTEN": "127.0.0.3:9002",
		"PORT": "9003", "SHADOW_MODE": "true", "ADMIT_RLS_SHADOW": "false",
		"RUNTIME_ROOT": "/data", "RUNTIME_SUBDIRECTORY": "rl", "LOG_LEVEL": "debug", "LOG_FORMAT": "JSON",
		"CACHE_KEY_PREFIX": "rl:", "QUOTA_MODE": "true"}
	o, err := parseFlags([]string{"--listen", "127.0.0.4:9004"}, referenceEnv(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"flag over ADMIT_RLS_ and GRPC_*", o.GRPCListen, "127.0.0.4:9004"},
		{"reference over default", o.HTTPListen, "0.0.0.0:9003"},
		{"config", o.Config, filepath.Join("/data", "rl", "config")},
		{"prefix", o.StorePrefix, "rl:"},
		{"log-level", o.LogLevel.String(), "DEBUG"},
		{"log-format", o.LogFormat, "json"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if o.Shadow || !o.QuotaMode {
		t.Errorf("shadow %v, quota-mode %v: want ADMIT_RLS_SHADOW=false over SHADOW_MODE, QUOTA_MODE read", o.Shadow, o.QuotaMode)
	}
	if !slices.Contains(o.infos, "GRPC_HOST is not read: --listen or ADMIT_RLS_LISTEN is given") {
		t.Errorf("infos %q lack GRPC_HOST's", o.infos)
	}
}

// TestRLSReferenceCounting honours the reference's
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT and LOCAL_CACHE_SIZE_IN_BYTES
// through admit rls's flags, which win over them, and reads neither
// outside reference mode.
func TestRLSReferenceCounting(t *testing.T) {
	base := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379",
		"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "true", "LOCAL_CACHE_SIZE_IN_BYTES": "1048576"}
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		stop  bool
		bytes int
	}{
		{"reference", nil, nil, true, 1 << 20},
		{"flags win", []string{"--stop-increment-over-limit=false", "--local-cache-bytes", "0"}, nil, false, 0},
		{"ADMIT_RLS_ wins", nil, map[string]string{"ADMIT_RLS_STOP_INCREMENT_OVER_LIMIT": "false", "ADMIT_RLS_LOCAL_CACHE_BYTES": "600000"}, false, 600000},
	} {
		env := maps.Clone(base)
		maps.Copy(env, tc.env)
		o, err := parseFlags(tc.args, referenceEnv(env), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if o.StopIncrement != tc.stop || o.LocalCacheBytes != tc.bytes {
			t.Errorf("%s: stop %v, bytes %d; want %v, %d", tc.name, o.StopIncrement, o.LocalCacheBytes, tc.stop, tc.bytes)
		}
	}
	o, err := parseFlags([]string{"--config", "x"}, func(k string) string { return base[k] }, io.Discard)
	if err != nil || o.StopIncrement || o.LocalCacheBytes != 0 {
		t.Errorf("admit mode: stop %v, bytes %d, %v; want neither read", o.StopIncrement, o.LocalCacheBytes, err)
	}
	_, err = parseFlags([]string{"--config", "x", "--local-cache-bytes", "-5"}, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--local-cache-bytes") || !strings.Contains(err.Error(), "must be at least 0") {
		t.Errorf("--local-cache-bytes -5: got %v, want refused naming the flag", err)
	}
}

// TestRLSReferenceStore maps the reference's Redis settings onto a store
// URL.
func TestRLSReferenceStore(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"REDIS_URL": "r:6379", "REDIS_AUTH": "s3cret", "REDIS_TLS": "true", "REDIS_POOL_SIZE": "4", "REDIS_TIMEOUT": "2s"},
			"rediss://:s3cret@r:6379?dial_timeout=2s&pool_size=4"},
		{map[string]string{"REDIS_URL": "r:6379", "REDIS_AUTH": "app:s3cret"}, "redis://app:s3cret@r:6379?dial_timeout=10s&pool_size=10"},
		{map[string]string{"REDIS_TYPE": "CLUSTER", "REDIS_URL": "a:7000,b:7001,c:7002"},
			"redis+cluster://a:7000?addr=b%3A7001&addr=c%3A7002&dial_timeout=10s&pool_size=10"},
		{map[string]string{"REDIS_TYPE": "sentinel", "REDIS_URL": "mymaster,s1:26379,s2:26379", "REDIS_AUTH": "m", "REDIS_SENTINEL_AUTH": "s"},
			"redis+sentinel://:s@s1:26379?addr=s2%3A26379&dial_timeout=10s&master_name=mymaster&password=m&pool_size=10"},
	} {
		tc.env["REDIS_SOCKET_TYPE"] = "tcp"
		o, err := parseFlags(nil, referenceEnv(tc.env), io.Discard)
		if err != nil || o.Store.URL != tc.want {
			t.Errorf("%v: got %q, %v; want %q", tc.env, o.Store.URL, err, tc.want)
		}
		// The per-second Redis's variables make its store alike.
		perSecond := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "main:6379", "REDIS_PERSECOND": "true"}
		for k, v := range tc.env {
			perSecond[strings.Replace(k, "REDIS_", "REDIS_PERSECOND_", 1)] = v
		}
		o, err = parseFlags(nil, referenceEnv(perSecond), io.Discard)
		if err != nil || o.PerSecondStore.URL != tc.want || o.Store.URL != "redis://main:6379?dial_timeout=10s&pool_size=10" {
			t.Errorf("%v: got %q beside %q, %v; want %q beside the main Redis", perSecond, o.PerSecondStore.URL, o.Store.URL, err, tc.want)
		}
	}
}

// TestRLSReferenceMemcache maps BACKEND_TYPE=memcache onto a memcache://
// store URL of MEMCACHE_HOST_PORT and MEMCACHE_MAX_IDLE_CONNS; the Redis
// store's variables, unread there, refuse nothing, not even the default
// REDIS_SOCKET_TYPE unix.
func TestRLSReferenceMemcache(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"MEMCACHE_HOST_PORT": "a:11211,b:11212"}, "memcache://a:11211,b:11212?max_idle_conns=2"},
		{map[string]string{"MEMCACHE_HOST_PORT": "a:11211", "MEMCACHE_MAX_IDLE_CONNS": "8", "REDIS_TYPE": "ring"}, "memcache://a:11211?max_idle_conns=8"},
		{map[string]string{"MEMCACHE_HOST_PORT": "a:11211", "MEMCACHE_MAX_IDLE_CONNS": "0"}, "memcache://a:11211"},
	} {
		tc.env["BACKEND_TYPE"] = "memcache"
		o, err := parseFlags(nil, referenceEnv(tc.env), io.Discard)
		if err != nil || o.Store.URL != tc.want || o.Store.Kind != storeurl.Memcache || o.PerSecondStore.Kind != "" {
			t.Errorf("%v: got %q, per-second %q, %v; want %q alone", tc.env, o.Store.URL, o.PerSecondStore.URL, err, tc.want)
		}
	}
	// A host the URL cannot take is refused in the variables' words.
	_, err := parseFlags(nil, referenceEnv(map[string]string{"BACKEND_TYPE": "memcache", "MEMCACHE_HOST_PORT": "a:11211 b:11212"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), `MEMCACHE_HOST_PORT, MEMCACHE_MAX_IDLE_CONNS "memcache://a:11211 b:11212?max_idle_conns=2": want`) {
		t.Errorf("a space in MEMCACHE_HOST_PORT: got %v, want refused naming the variables", err)
	}
}

// TestRLSReferenceRedisTLSFiles maps REDIS_TLS_CLIENT_CERT, _KEY and
// _CACERT onto the TLS parameters of each store whose TLS variable is
// true: the reference builds one TLS configuration of them for both of
// its Redis, and uses it for the one whose TLS is on.
func TestRLSReferenceRedisTLSFiles(t *testing.T) {
	const (
		files = "&sslcert=%2Fetc%2Fr%2Fc.pem&sslkey=%2Fetc%2Fr%2Fk.pem&sslrootcert=%2Fetc%2Fr%2Fca.pem"
		main  = "main:6380?dial_timeout=10s&pool_size=10"
		ps    = "ps:6380?dial_timeout=10s&pool_size=10"
	)
	for _, tc := range []struct{ tls, perSecondTLS, store, perSecond string }{
		{"true", "true", "rediss://" + main + files, "rediss://" + ps + files},
		{"true", "false", "rediss://" + main + files, "redis://" + ps},
		{"false", "true", "redis://" + main, "rediss://" + ps + files},
		{"false", "false", "redis://" + main, "redis://" + ps},
	} {
		env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "main:6380", "REDIS_TLS": tc.tls,
			"REDIS_PERSECOND": "true", "REDIS_PERSECOND_SOCKET_TYPE": "tcp", "REDIS_PERSECOND_URL": "ps:6380", "REDIS_PERSECOND_TLS": tc.perSecondTLS,
			"REDIS_TLS_CLIENT_CERT": "/etc/r/c.pem", "REDIS_TLS_CLIENT_KEY": "/etc/r/k.pem", "REDIS_TLS_CACERT": "/etc/r/ca.pem"}
		o, err := parseFlags(nil, referenceEnv(env), io.Discard)
		if err != nil || o.Store.URL != tc.store || o.PerSecondStore.URL != tc.perSecond {
			t.Errorf("REDIS_TLS=%s, REDIS_PERSECOND_TLS=%s: got %q and %q, %v; want %q and %q",
				tc.tls, tc.perSecondTLS, o.Store.URL, o.PerSecondStore.URL, err, tc.store, tc.perSecond)
		}
		if want := "REDIS_TLS_CACERT"; !strings.Contains(o.storeFrom[0], want) || !strings.Contains(o.storeFrom[1], want) {
			t.Errorf("stores from %q and %q: want each to name %s", o.storeFrom[0], o.storeFrom[1], want)
		}
	}
	// The CA alone verifies the server, with no client certificate.
	o, err := parseFlags(nil, referenceEnv(map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "main:6380", "REDIS_TLS": "true", "REDIS_TLS_CACERT": "/etc/r/ca.pem"}), io.Discard)
	if want := "rediss://" + main + "&sslrootcert=%2Fetc%2Fr%2Fca.pem"; err != nil || o.Store.URL != want {
		t.Errorf("REDIS_TLS_CACERT alone: got %q, %v; want %q", o.Store.URL, err, want)
	}
}

// TestRLSReferenceRedisTLSServes starts admit rls in reference mode on a
// Redis that speaks only TLS and wants a client certificate, named by the
// reference's variables; a file that cannot be read stops startup with
// exit 2, naming the variables and the parameter.
func TestRLSReferenceRedisTLSServes(t *testing.T) {
	ca := testcert.NewCA(t, "admit rls test CA")
	srv := testserver.RedisTLS(t, ca)
	cert, key := ca.ClientFiles(t, testcert.Leaf{Serial: 2})
	root := t.TempDir()
	dir := filepath.Join(root, "current", "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte(rlsTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RUNTIME_ROOT": filepath.Join(root, "current"), "RUNTIME_SUBDIRECTORY": "ratelimit",
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": srv.Addr, "REDIS_TLS": "true",
		"REDIS_TLS_CLIENT_CERT": cert, "REDIS_TLS_CLIENT_KEY": key, "REDIS_TLS_CACERT": ca.File,
		"USE_STATSD": "false", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "0", "HOST": "127.0.0.1", "PORT": "0",
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": "0"}
	o, err := parseFlags(nil, referenceEnv(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := serveWith(t, o).client(t, nil)
	wantCodes(t, codesOf(t, c, "192.0.2.1", 3), ok, ok, over)

	missing := filepath.Join(t.TempDir(), "missing.pem")
	env["REDIS_TLS_CLIENT_KEY"] = missing
	err = Run(context.Background(), nil, referenceEnv(env), io.Discard, io.Discard)
	if code := config.ExitCode(err); code != 2 || !strings.Contains(err.Error(), "REDIS_TLS_CLIENT_KEY") || !strings.Contains(err.Error(), "sslkey: open "+missing) {
		t.Errorf("REDIS_TLS_CLIENT_KEY missing: exit %d, %v; want exit 2 naming it and sslkey", code, err)
	}
	env["REDIS_TLS_CLIENT_KEY"] = ""
	err = Run(context.Background(), nil, referenceEnv(env), io.Discard, io.Discard)
	if code := config.ExitCode(err); code != 2 || !strings.Contains(err.Error(), "sslcert is given without sslkey") {
		t.Errorf("REDIS_TLS_CLIENT_CERT without its key: exit %d, %v; want exit 2", code, err)
	}
}

// TestRLSEnvRefused refuses a mode that is neither admit's nor the
// reference's, in its variable's words.
func TestRLSEnvRefused(t *testing.T) {
	_, err := parseFlags(nil, func(k string) string { return map[string]string{"ADMIT_RLS_ENV": "lyft"}[k] }, io.Discard)
	if want := `admit rls: ADMIT_RLS_ENV "lyft": want admit or envoy`; err == nil || err.Error() != want {
		t.Errorf("ADMIT_RLS_ENV=lyft: got %v, want %s", err, want)
	}
}

// TestRLSReferenceServes starts admit rls with the reference's
// environment only, on Redis, and calls it over gRPC and over /json.
func TestRLSReferenceServes(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "current", "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "edge.yaml"), []byte(rlsTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RUNTIME_ROOT": filepath.Join(root, "current"), "RUNTIME_SUBDIRECTORY": "ratelimit",
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": testredis.Options(t).Addr, "CACHE_KEY_PREFIX": testredis.Prefix(t),
		"USE_STATSD": "false", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "0", "HOST": "127.0.0.1", "PORT": "0",
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": "0"}
	o, err := parseFlags(nil, referenceEnv(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := serveWith(t, o)
	c := s.client(t, nil)
	if got := codesOf(t, c, "192.0.2.1", 1); got[0].String() != "OK" {
		t.Errorf("gRPC: got %v, want OK", got)
	}
	// The second and third calls over /json: the limit is 2 a minute.
	for i, want := range []int{200, 429} {
		if code, _ := postJSON(t, s.http, "application/json", `{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"192.0.2.1"}]}]}`); code != want {
			t.Errorf("/json call %d: got %d, want %d", i+2, code, want)
		}
	}
}

// serveWith runs serve with o, its listeners' addresses read once it
// serves, until t ends.
func serveWith(t *testing.T, o options) *rlsServer {
	t.Helper()
	s := &rlsServer{hangups: make(chan os.Signal, 1), config: o.Config}
	o.watchEvery = 10 * time.Millisecond
	ready := make(chan struct{})
	o.ready = func(a addresses) { s.addr, s.metrics, s.http = a.grpc, a.metrics, a.http; close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, o, s.hangups, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("admit rls: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("admit rls ended before serving: %v", err)
	}
	return s
}

// TestRLSValidate checks the flags, the environment and the files as
// startup does, without serving: exit 0 and the limits, or exit 2 and the
// place of the error, as ratelimit validate too.
func TestRLSValidate(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "config", "edge.yaml"), filepath.Join(dir, "bad.yaml")
	os.MkdirAll(filepath.Dir(good), 0o755)
	if err := os.WriteFile(good, []byte(rlsTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("domain: a\ndescriptors:\n  - key: x\n   value: y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	cert, key := testcert.NewCA(t, "validate CA").Server(t, 1)
	missing := filepath.Join(dir, "missing.pem")
	refArgs := []string{"validate", "--env=envoy"}
	refEnv := func(k string) string {
		return map[string]string{"RUNTIME_ROOT": dir, "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379"}[k]
	}
	for _, tc := range []struct {
		name   string
		args   []string
		getenv func(string) string
		code   int
		want   string
	}{
		{"good", []string{"validate", "--config", good}, none, 0, "edge.remote_address: unit=MINUTE requests_per_unit=2, shadow_mode: false, quota_mode: false\nok\n"},
		{"bad YAML", []string{"validate", "--config", bad}, none, 2, "bad.yaml:2: YAML: did not find expected '-' indicator"},
		{"no config", []string{"validate"}, none, 2, "--config is required"},
		{"reference's variables outside its mode", []string{"validate", "--config", good}, func(k string) string {
			return map[string]string{"REDIS_URL": "redis:6379", "PORT": "9000"}[k]
		}, 0, "warn  envoyproxy/ratelimit's variables are set and not read: they are read with --env envoy (ADMIT_RLS_ENV=envoy), or run as ratelimit (see docs/rls.md): PORT,REDIS_URL\nedge."},
		{"as ratelimit", refArgs, refEnv, 0, "ok\n"},
		{"as ratelimit, refused", refArgs, func(k string) string { return map[string]string{"REDIS_PERSECOND": "true"}[k] + refEnv(k) }, 2, `REDIS_PERSECOND_SOCKET_TYPE unset: the reference's default "unix"`},
		// What startup refuses before it connects, validate refuses too.
		{"a client certificate without its key", []string{"validate", "--config", good, "--store", "rediss://cache:6380?sslcert=" + cert},
			none, 2, "sslcert is given without sslkey"},
		{"a per-second store's missing CA", []string{"validate", "--config", good, "--per-second-store", "rediss://cache:6380?sslrootcert=" + missing},
			none, 2, "--per-second-store"},
		{"a certificate that does not load", []string{"validate", "--config", good, "--tls-cert", bad, "--tls-key", bad},
			none, 2, "--tls-cert"},
		{"a missing client CA", []string{"validate", "--config", good, "--tls-cert", cert, "--tls-key", key, "--client-ca", missing},
			none, 2, "--client-ca"},
		{"as ratelimit, a client certificate without its key", refArgs, func(k string) string {
			return map[string]string{"REDIS_TLS": "true", "REDIS_TLS_CLIENT_CERT": cert}[k] + refEnv(k)
		}, 2, "sslcert is given without sslkey"},
	} {
		var out strings.Builder
		err := Run(context.Background(), tc.args, tc.getenv, &out, &out)
		if err != nil {
			out.WriteString(err.Error())
		}
		if code := config.ExitCode(err); code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", tc.name, code, out.String(), tc.code, tc.want)
		}
	}
}

// TestRLSMigrationTableDocumented keeps docs/rls.md's migration table
// equal to refVars: one row for each variable, its default and what admit
// rls does with it.
func TestRLSMigrationTableDocumented(t *testing.T) {
	data, err := os.ReadFile("../../../docs/rls.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refVars {
		if row := r.docRow(); !strings.Contains(string(data), "\n"+row+"\n") {
			t.Errorf("docs/rls.md lacks the row\n%s", row)
		}
	}
}

// FuzzReferenceEnv sets one of the reference's variables to any value:
// startup never panics, and a refusal names the variable.
func FuzzReferenceEnv(f *testing.F) {
	// Seeds: values the reference documents, edges of each kind, and
	// values that ask for what admit lacks.
	for _, seed := range []struct {
		i int
		v string
	}{{0, "::1"}, {1, "8080"}, {1, "-1"}, {5, "0.0.0.0"}, {36, "a:b,c"}, {50, "1"}, {59, "sentinel"}, {60, "m,s1:1,s2:2"}, {60, "a:1,b:2"},
		{62, "user:pa:ss"}, {52, "2"}, {14, "TRACE"}, {15, "JSON"}, {16, "GRPC_XDS_SOTW"}, {82, "1.5"}} {
		f.Add(seed.i, seed.v)
	}
	f.Fuzz(func(t *testing.T, i int, v string) {
		if i < 0 || strings.ContainsRune(v, 0) {
			return
		}
		r := refVars[i%len(refVars)]
		env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379", r.name: v}
		_, err := parseFlags(nil, referenceEnv(env), io.Discard)
		if err != nil && !strings.Contains(err.Error(), r.name) && !strings.Contains(err.Error(), "--") {
			t.Errorf("%s=%q: %v does not name it", r.name, v, err)
		}
	})
}
