package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/demo"
	"github.com/admitgo/admit/server/storeurl"
)

// app is the upstream that every case gets from the environment unless it
// says otherwise, so that cases need not repeat it.
const app = "http://app.internal:3000"

// parse runs Parse with args and an environment of env over
// ADMIT_UPSTREAM=app.
func parse(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	full := map[string]string{"ADMIT_UPSTREAM": app}
	for k, v := range env {
		full[k] = v
	}
	var out bytes.Buffer
	return Parse(args, func(k string) string { return full[k] }, &out)
}

// defaults is what parse answers with no arguments.
func defaults() Config {
	return Config{
		Listen:            ":8080",
		Upstream:          mustURL(app),
		Store:             storeurl.Store{Kind: storeurl.Memory},
		StoreMigrate:      true,
		StoreFail:         quota.FailClosed,
		RouteFolding:      true,
		MaxConns:          4096,
		MaxConnsPerClient: 64,
		MetricsListen:     "127.0.0.1:9464",
		DrainTimeout:      25 * time.Second,
		LogFormat:         "text",
		Upgrades:          []string{"websocket"},
	}
}

// describe prints every field of c, so that comparisons show the whole
// configuration and pointers print as what they point to.
func describe(c Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Listen=%q Upstream=%v UpstreamHealth=%q Demo=%v\n", c.Listen, c.Upstream, c.UpstreamHealth, c.Demo)
	for _, r := range c.Routes {
		fmt.Fprintf(&b, "Route %v=%q cost %d\n", r.Groups, r.Pattern, r.Cost)
	}
	fmt.Fprintf(&b, "TrustedProxies=%v ProxyProtocolFrom=%v Shadow=%v PolicyHeaders=%v\n",
		c.TrustedProxies, c.ProxyProtocolFrom, c.Shadow, c.PolicyHeaders)
	fmt.Fprintf(&b, "EscapedSlashes=%v RouteFolding=%v MethodOverride=%v MaxConns=%d MaxConnsPerClient=%d\n",
		c.EscapedSlashes, c.RouteFolding, c.MethodOverride, c.MaxConns, c.MaxConnsPerClient)
	fmt.Fprintf(&b, "Store=%+v StorePrefix=%q StoreTable=%q StoreMigrate=%v StoreFail=%v Replicas=%d MetricsListen=%q\n",
		c.Store, c.StorePrefix, c.StoreTable, c.StoreMigrate, c.StoreFail, c.Replicas, c.MetricsListen)
	fmt.Fprintf(&b, "TLSCert=%q TLSKey=%q DrainDelay=%v DrainTimeout=%v ConfigFile=%q\n", c.TLSCert, c.TLSKey, c.DrainDelay, c.DrainTimeout, c.ConfigFile)
	fmt.Fprintf(&b, "LogFormat=%q LogLevel=%v\n", c.LogFormat, c.LogLevel)
	for _, g := range slices.Sorted(maps.Keys(c.Budgets)) {
		fmt.Fprintf(&b, "Budget %s: %+v\n", g, c.Budgets[g])
	}
	return b.String()
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func prefixes(s ...string) []netip.Prefix {
	var ps []netip.Prefix
	for _, p := range s {
		ps = append(ps, netip.MustParsePrefix(p))
	}
	return ps
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(c *Config) // changes from defaults()
	}{
		{"defaults", nil, nil, func(c *Config) {}},

		{"listen flag", []string{"--listen", "127.0.0.1:9000"}, nil, func(c *Config) { c.Listen = "127.0.0.1:9000" }},
		{"listen env", nil, map[string]string{"ADMIT_LISTEN": ":7000"}, func(c *Config) { c.Listen = ":7000" }},
		{"listen flag over env", []string{"-listen=:9000"}, map[string]string{"ADMIT_LISTEN": ":7000"}, func(c *Config) { c.Listen = ":9000" }},
		{"listen IPv6", []string{"--listen", "[::1]:8080"}, nil, func(c *Config) { c.Listen = "[::1]:8080" }},

		{"upstream flag", []string{"--upstream", "https://example.com/base"}, nil, func(c *Config) {
			c.Upstream = mustURL("https://example.com/base")
		}},
		{"upstream flag over env", []string{"--upstream", "http://127.0.0.1:3000"}, nil, func(c *Config) {
			c.Upstream = mustURL("http://127.0.0.1:3000")
		}},
		{"upstream env", nil, map[string]string{"ADMIT_UPSTREAM": "http://localhost:5000"}, func(c *Config) {
			c.Upstream = mustURL("http://localhost:5000")
		}},

		{"demo flag without upstream", []string{"--demo"}, map[string]string{"ADMIT_UPSTREAM": ""}, func(c *Config) {
			c.Demo, c.Upstream, c.Routes, c.UpstreamHealth = true, nil, demoRoutes, demo.HealthPath
		}},
		{"demo env", nil, map[string]string{"ADMIT_DEMO": "1", "ADMIT_UPSTREAM": ""}, func(c *Config) {
			c.Demo, c.Upstream, c.Routes, c.UpstreamHealth = true, nil, demoRoutes, demo.HealthPath
		}},
		{"demo flag false over env", []string{"--demo=false"}, map[string]string{"ADMIT_DEMO": "true"}, func(c *Config) {}},
		{"demo with upstream", []string{"--demo"}, nil, func(c *Config) { c.Demo, c.Routes = true, demoRoutes }},
		{"demo with routes keeps them", []string{"--demo", "--route", "link=GET /x/{id}"}, nil, func(c *Config) {
			c.Demo, c.Routes = true, []Route{{Groups: []admit.Group{admit.GroupLink}, Pattern: "GET /x/{id}"}}
		}},

		{"routes", []string{"--route", "webhook=POST /hooks/{name}", "--route", "link=GET /l/{id}", "--route=health=GET /healthz"}, nil, func(c *Config) {
			c.Routes = []Route{{Groups: []admit.Group{admit.GroupWebhook}, Pattern: "POST /hooks/{name}"}, {Groups: []admit.Group{admit.GroupLink}, Pattern: "GET /l/{id}"}, {Groups: []admit.Group{admit.GroupHealth}, Pattern: "GET /healthz"}}
		}},
		{"route with host and no method", []string{"--route", "link=example.com/s/"}, nil, func(c *Config) {
			c.Routes = []Route{{Groups: []admit.Group{admit.GroupLink}, Pattern: "example.com/s/"}}
		}},

		{"trusted proxies flag", []string{"--trusted-proxy", "10.0.0.0/8, ::1/128 192.0.2.7"}, nil, func(c *Config) {
			c.TrustedProxies = prefixes("10.0.0.0/8", "::1/128", "192.0.2.7/32")
		}},
		{"trusted proxies repeated", []string{"--trusted-proxy", "127.0.0.1/32", "--trusted-proxy", "::1/128"}, nil, func(c *Config) {
			c.TrustedProxies = prefixes("127.0.0.1/32", "::1/128")
		}},
		{"trusted proxies env", nil, map[string]string{"ADMIT_TRUSTED_PROXY": "172.16.0.0/12"}, func(c *Config) {
			c.TrustedProxies = prefixes("172.16.0.0/12")
		}},
		{"trusted proxies, the older variable", nil, map[string]string{"ADMIT_TRUSTED_PROXIES": "172.16.0.0/12"}, func(c *Config) {
			c.TrustedProxies = prefixes("172.16.0.0/12")
		}},
		{"trusted proxies, the variable over the older one", nil, map[string]string{"ADMIT_TRUSTED_PROXY": "10.2.0.0/16", "ADMIT_TRUSTED_PROXIES": "172.16.0.0/12"}, func(c *Config) {
			c.TrustedProxies = prefixes("10.2.0.0/16")
		}},
		{"trusted proxies flag over env", []string{"--trusted-proxy=10.1.0.0/16"}, map[string]string{"ADMIT_TRUSTED_PROXIES": "172.16.0.0/12"}, func(c *Config) {
			c.TrustedProxies = prefixes("10.1.0.0/16")
		}},

		{"trusted proxies empty flag over env", []string{"--trusted-proxy="}, map[string]string{"ADMIT_TRUSTED_PROXIES": "172.16.0.0/12"}, func(c *Config) {}},
		{"trusted proxies mapped and host bits", []string{"--trusted-proxy", "::ffff:10.1.2.3/112,192.168.1.77/24"}, nil, func(c *Config) {
			c.TrustedProxies = prefixes("10.1.0.0/16", "192.168.1.0/24")
		}},
		{"proxy protocol flag", []string{"--proxy-protocol-from", "10.0.0.0/24"}, nil, func(c *Config) {
			c.ProxyProtocolFrom = prefixes("10.0.0.0/24")
		}},
		{"proxy protocol env", nil, map[string]string{"ADMIT_PROXY_PROTOCOL_FROM": "10.0.0.0/24,10.0.1.0/24"}, func(c *Config) {
			c.ProxyProtocolFrom = prefixes("10.0.0.0/24", "10.0.1.0/24")
		}},
		{"proxy protocol flag over env", []string{"--proxy-protocol-from", "10.9.0.0/16"}, map[string]string{"ADMIT_PROXY_PROTOCOL_FROM": "10.0.0.0/24"}, func(c *Config) {
			c.ProxyProtocolFrom = prefixes("10.9.0.0/16")
		}},

		{"shadow flag", []string{"--shadow"}, nil, func(c *Config) { c.Shadow = true }},
		{"shadow env", nil, map[string]string{"ADMIT_SHADOW": "true"}, func(c *Config) { c.Shadow = true }},
		{"disable limits flag, the alias of --shadow", []string{"--disable-anon-route-limits"}, nil, func(c *Config) { c.Shadow = true }},
		{"disable limits env", nil, map[string]string{"ADMIT_DISABLE_ANON_ROUTE_LIMITS": "T"}, func(c *Config) { c.Shadow = true }},
		{"disable limits env false", nil, map[string]string{"ADMIT_DISABLE_ANON_ROUTE_LIMITS": "0"}, func(c *Config) {}},
		{"disable limits flag over env", []string{"--disable-anon-route-limits=false"}, map[string]string{"ADMIT_DISABLE_ANON_ROUTE_LIMITS": "true"}, func(c *Config) {}},
		{"shadow env over the alias's", nil, map[string]string{"ADMIT_SHADOW": "false", "ADMIT_DISABLE_ANON_ROUTE_LIMITS": "true"}, func(c *Config) {}},

		{"store memory", []string{"--store", "memory"}, nil, func(c *Config) {}},
		{"store postgres", []string{"--store", "postgres://admit:s3cret@db:5432/admit?sslmode=disable"}, nil, func(c *Config) {
			c.Store = storeurl.Store{Kind: storeurl.Postgres, URL: "postgres://admit:s3cret@db:5432/admit?sslmode=disable"}
		}},
		{"store postgresql scheme", []string{"--store", "postgresql://db/admit"}, nil, func(c *Config) {
			c.Store = storeurl.Store{Kind: storeurl.Postgres, URL: "postgresql://db/admit"}
		}},
		{"store redis env", nil, map[string]string{"ADMIT_STORE": "redis://cache:6379/0"}, func(c *Config) {
			c.Store = storeurl.Store{Kind: storeurl.Redis, URL: "redis://cache:6379/0"}
		}},
		{"store rediss", []string{"--store", "rediss://cache:6380"}, nil, func(c *Config) {
			c.Store = storeurl.Store{Kind: storeurl.Redis, URL: "rediss://cache:6380"}
		}},
		{"store flag over env", []string{"--store", "memory"}, map[string]string{"ADMIT_STORE": "redis://cache:6379"}, func(c *Config) {}},

		{"store migrate off", []string{"--store-migrate=false"}, nil, func(c *Config) { c.StoreMigrate = false }},
		{"store migrate env off", nil, map[string]string{"ADMIT_STORE_MIGRATE": "false"}, func(c *Config) { c.StoreMigrate = false }},
		{"store migrate flag over env", []string{"--store-migrate"}, map[string]string{"ADMIT_STORE_MIGRATE": "false"}, func(c *Config) {}},

		{"store fail open", []string{"--store", "redis://127.0.0.1:6379", "--store-fail", "open"}, nil, func(c *Config) {
			c.Store, c.StoreFail = storeurl.Store{Kind: storeurl.Redis, URL: "redis://127.0.0.1:6379"}, quota.FailOpen
		}},
		{"store fail local env", nil, map[string]string{"ADMIT_STORE": "redis://127.0.0.1:6379", "ADMIT_STORE_FAIL": "local", "ADMIT_REPLICAS": "3"}, func(c *Config) {
			c.Store, c.StoreFail, c.Replicas = storeurl.Store{Kind: storeurl.Redis, URL: "redis://127.0.0.1:6379"}, quota.FailLocal, 3
		}},
		{"store fail flag over env", []string{"--store-fail=closed"}, map[string]string{"ADMIT_STORE": "redis://127.0.0.1:6379", "ADMIT_STORE_FAIL": "open"}, func(c *Config) {
			c.Store = storeurl.Store{Kind: storeurl.Redis, URL: "redis://127.0.0.1:6379"}
		}},

		{"metrics listen flag", []string{"--metrics-listen", ":0"}, nil, func(c *Config) { c.MetricsListen = ":0" }},
		{"admin hosts repeated", []string{"--admin-host", "Admit.Internal.", "--admin-host", "a.example,b.example"}, nil, func(c *Config) {
			c.AdminHosts = []string{"admit.internal", "a.example", "b.example"}
		}},
		{"http engine env", nil, map[string]string{"ADMIT_HTTP_ENGINE": "net/http"}, func(c *Config) { c.HTTPEngine = EngineNetHTTP }},
		{"admin hosts env", nil, map[string]string{"ADMIT_ADMIN_HOST": "ops.example ops2.example"}, func(c *Config) {
			c.AdminHosts = []string{"ops.example", "ops2.example"}
		}},
		{"metrics listen env", nil, map[string]string{"ADMIT_METRICS_LISTEN": "0.0.0.0:9100"}, func(c *Config) { c.MetricsListen = "0.0.0.0:9100" }},
		{"metrics listen flag over env", []string{"--metrics-listen", "[::1]:9464"}, map[string]string{"ADMIT_METRICS_LISTEN": ":9100"}, func(c *Config) {
			c.MetricsListen = "[::1]:9464"
		}},

		{"tls flags", []string{"--tls-cert", "cert.pem", "--tls-key", "key.pem"}, nil, func(c *Config) { c.TLSCert, c.TLSKey = "cert.pem", "key.pem" }},
		{"tls env", nil, map[string]string{"ADMIT_TLS_CERT": "/etc/admit/tls.crt", "ADMIT_TLS_KEY": "/etc/admit/tls.key"}, func(c *Config) {
			c.TLSCert, c.TLSKey = "/etc/admit/tls.crt", "/etc/admit/tls.key"
		}},
		{"tls flag over env, one each", []string{"--tls-cert", "a.pem"}, map[string]string{"ADMIT_TLS_CERT": "b.pem", "ADMIT_TLS_KEY": "k.pem"}, func(c *Config) {
			c.TLSCert, c.TLSKey = "a.pem", "k.pem"
		}},

		{"drain timeout flag", []string{"--drain-timeout", "1m30s"}, nil, func(c *Config) { c.DrainTimeout = 90 * time.Second }},
		{"drain timeout env", nil, map[string]string{"ADMIT_DRAIN_TIMEOUT": "5s"}, func(c *Config) { c.DrainTimeout = 5 * time.Second }},
		{"drain timeout flag over env", []string{"--drain-timeout=10s"}, map[string]string{"ADMIT_DRAIN_TIMEOUT": "5s"}, func(c *Config) {
			c.DrainTimeout = 10 * time.Second
		}},

		{"upstream health flag", []string{"--upstream-health", "/status?full=1"}, nil, func(c *Config) { c.UpstreamHealth = "/status?full=1" }},
		{"upstream health env", nil, map[string]string{"ADMIT_UPSTREAM_HEALTH": "/healthz"}, func(c *Config) { c.UpstreamHealth = "/healthz" }},
		{"demo with upstream keeps health unset", []string{"--demo", "--upstream", app}, nil, func(c *Config) { c.Demo, c.Routes = true, demoRoutes }},
		{"demo health path overridden", []string{"--demo", "--upstream-health", "/ready"}, map[string]string{"ADMIT_UPSTREAM": ""}, func(c *Config) {
			c.Demo, c.Upstream, c.Routes, c.UpstreamHealth = true, nil, demoRoutes, "/ready"
		}},

		{"policy headers flag", []string{"--policy-headers"}, nil, func(c *Config) { c.PolicyHeaders = true }},
		{"policy headers env", nil, map[string]string{"ADMIT_POLICY_HEADERS": "true"}, func(c *Config) { c.PolicyHeaders = true }},

		{"store prefix with redis", []string{"--store", "redis://cache:6379", "--store-prefix", "shop:"}, nil, func(c *Config) {
			c.Store, c.StorePrefix = storeurl.Store{Kind: storeurl.Redis, URL: "redis://cache:6379"}, "shop:"
		}},
		{"store table env with postgres", nil, map[string]string{"ADMIT_STORE": "postgres://db/admit", "ADMIT_STORE_TABLE": "limits.admit_quota"}, func(c *Config) {
			c.Store, c.StoreTable = storeurl.Store{Kind: storeurl.Postgres, URL: "postgres://db/admit"}, "limits.admit_quota"
		}},

		{"drain delay flag", []string{"--drain-delay", "5s"}, nil, func(c *Config) { c.DrainDelay = 5 * time.Second }},
		{"drain delay env zero", nil, map[string]string{"ADMIT_DRAIN_DELAY": "0s"}, func(c *Config) {}},

		{"log json", []string{"--log-format", "json"}, nil, func(c *Config) { c.LogFormat = "json" }},
		{"log level env", nil, map[string]string{"ADMIT_LOG_LEVEL": "DEBUG"}, func(c *Config) { c.LogLevel = slog.LevelDebug }},
		{"log level flag over env", []string{"--log-level", "warn"}, map[string]string{"ADMIT_LOG_LEVEL": "debug"}, func(c *Config) { c.LogLevel = slog.LevelWarn }},

		{"config file", []string{"--config", "testdata/full.yaml"}, nil, func(c *Config) {
			c.ConfigFile = "testdata/full.yaml"
			c.Routes = []Route{{Groups: []admit.Group{admit.GroupWebhook}, Pattern: "POST /hooks/github"}, {Groups: []admit.Group{admit.GroupLink}, Pattern: "GET /s/{token}"}, {Groups: []admit.Group{admit.GroupHealth}, Pattern: "GET /ready"}}
			c.Budgets = map[admit.Group]admit.Budget{
				admit.GroupWebhook: {
					Rate: 100, Burst: 1000, SharedRate: 200.5, SharedBurst: 2000,
					PerClient: 8, Inflight: 128, MaxClients: 4096,
					ReadTimeout: 15 * time.Second, MaxBodyBytes: 2 << 20, HoldTimeout: 45 * time.Second,
					Charge: admit.ChargeOnFailure,
				},
				admit.GroupLink:   {Burst: 5, Charge: admit.ChargeAlways},
				admit.GroupHealth: {ReadTimeout: -1, MaxBodyBytes: -1, HoldTimeout: -1},
			}
		}},
		{"config file env", nil, map[string]string{"ADMIT_CONFIG": "testdata/empty.yaml"}, func(c *Config) {
			c.ConfigFile = "testdata/empty.yaml"
		}},
		{"config file flag over env", []string{"--config", "testdata/empty.yaml"}, map[string]string{"ADMIT_CONFIG": "testdata/full.yaml"}, func(c *Config) {
			c.ConfigFile = "testdata/empty.yaml"
		}},
		{"config file routes then flag routes", []string{"--config", "testdata/full.yaml", "--route", "link=GET /l/{id}"}, nil, func(c *Config) {
			c.ConfigFile = "testdata/full.yaml"
			c.Routes = []Route{{Groups: []admit.Group{admit.GroupWebhook}, Pattern: "POST /hooks/github"}, {Groups: []admit.Group{admit.GroupLink}, Pattern: "GET /s/{token}"}, {Groups: []admit.Group{admit.GroupHealth}, Pattern: "GET /ready"}, {Groups: []admit.Group{admit.GroupLink}, Pattern: "GET /l/{id}"}}
			full := mustParse(t, []string{"--config", "testdata/full.yaml"})
			c.Budgets = full.Budgets
		}},
		{"config file infinite rate", []string{"--config", "testdata/infinite-rate.yaml"}, nil, func(c *Config) {
			c.ConfigFile = "testdata/infinite-rate.yaml"
			c.Budgets = map[admit.Group]admit.Budget{admit.GroupHealth: {Rate: rate.Inf}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(t, tt.args, tt.env)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			want := defaults()
			tt.want(&want)
			if g, w := describe(got), describe(want); g != w {
				t.Errorf("got\n%v\nwant\n%v", g, w)
			}
		})
	}
}

// mustParse parses args over the default test environment.
func mustParse(t *testing.T, args []string) Config {
	t.Helper()
	c, err := parse(t, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // the whole message, or "START*PART": its start, then a reason containing PART
	}{
		{"trusted proxy /0", []string{"--trusted-proxy", "0.0.0.0/0"}, nil, `admit: --trusted-proxy "0.0.0.0/0": *trusts every client`},
		{"trusted proxy ::/0 in env", nil, map[string]string{"ADMIT_TRUSTED_PROXIES": "10.0.0.0/8,::/0"}, `admit: ADMIT_TRUSTED_PROXIES "10.0.0.0/8,::/0": *trusts every client`},
		{"trusted proxy mapped /0", []string{"--trusted-proxy", "::ffff:0.0.0.0/96"}, nil, `admit: --trusted-proxy "::ffff:0.0.0.0/96": *trusts every client`},
		{"trusted proxy zoned address", []string{"--trusted-proxy", "fe80::1%eth0"}, nil, `admit: --trusted-proxy "fe80::1%eth0": *zone`},
		{"trusted proxy bad CIDR", []string{"--trusted-proxy", "10.0.0.0/33"}, nil, `admit: --trusted-proxy "10.0.0.0/33": want a prefix length from 1 to 32 after the slash`},
		{"trusted proxy bad address of a CIDR", []string{"--trusted-proxy", "10.0.0.300/8"}, nil, `admit: --trusted-proxy "10.0.0.300/8": "10.0.0.300" is not an IP address`},
		{"trusted proxy bad one of a list", nil, map[string]string{"ADMIT_TRUSTED_PROXIES": "10.0.0.0/8, proxy.internal"}, `admit: ADMIT_TRUSTED_PROXIES "10.0.0.0/8, proxy.internal": "proxy.internal": not an IP address or CIDR prefix`},
		{"trusted proxy garbage", []string{"--trusted-proxy", "proxy.internal"}, nil, `admit: --trusted-proxy "proxy.internal": *`},
		{"trusted proxy bad one of two flags", []string{"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "10.0.0.300"}, nil, `admit: --trusted-proxy "10.0.0.300": not an IP address or CIDR prefix`},
		{"proxy protocol /0", []string{"--proxy-protocol-from", "::/0"}, nil, `admit: --proxy-protocol-from "::/0": *trusts every client`},
		{"proxy protocol bad env", nil, map[string]string{"ADMIT_PROXY_PROTOCOL_FROM": "10.0.0.0/x"}, `admit: ADMIT_PROXY_PROTOCOL_FROM "10.0.0.0/x": *`},

		{"bool maybe flag", []string{"--disable-anon-route-limits=maybe"}, nil, `admit: --disable-anon-route-limits "maybe": not a boolean (use true or false)`},
		{"a flag and its older name differ", []string{"--shadow", "--disable-anon-route-limits=false"}, nil, `admit: --shadow "true" and --disable-anon-route-limits "false" differ: --disable-anon-route-limits is another name of --shadow; give one`},
		{"bool maybe env", nil, map[string]string{"ADMIT_DISABLE_ANON_ROUTE_LIMITS": "maybe"}, `admit: ADMIT_DISABLE_ANON_ROUTE_LIMITS "maybe": not a boolean (use true or false)`},
		{"bool yes env", nil, map[string]string{"ADMIT_SHADOW": "yes"}, `admit: ADMIT_SHADOW "yes": not a boolean (use true or false)`},
		{"bool demo env", nil, map[string]string{"ADMIT_DEMO": "on"}, `admit: ADMIT_DEMO "on": not a boolean (use true or false)`},
		{"bool migrate flag", []string{"--store-migrate=no"}, nil, `admit: --store-migrate "no": not a boolean (use true or false)`},
		{"bool value as separate argument", []string{"--store-migrate", "false"}, nil, `admit: unexpected argument "false" (a boolean flag takes its value as --flag=false)`},
		{"stray argument", []string{"serve"}, nil, `admit: unexpected argument "serve"`},

		{"unknown flag", []string{"--listne", ":80"}, nil, `admit: unknown flag --listne; admit --help lists the flags`},
		{"unknown flag with one dash", []string{"-rate-limit", "5"}, nil, `admit: unknown flag --rate-limit; admit --help lists the flags`},
		{"flag without value", []string{"--listen"}, nil, `admit: --listen needs a value (--listen ADDR)`},
		{"bad flag syntax", []string{"---listen", ":80"}, nil, `admit: bad flag syntax "---listen"; admit --help lists the flags`},

		{"version not a boolean", []string{"--version=maybe"}, nil, `admit: --version "maybe": not a boolean (use true or false)`},

		{"listen without port", []string{"--listen", "localhost"}, nil, `admit: --listen "localhost": missing port in address`},
		{"listen bad port", []string{"--listen", ":http"}, nil, `admit: --listen ":http": port must be a number from 0 to 65535`},
		{"listen port too large env", nil, map[string]string{"ADMIT_LISTEN": ":70000"}, `admit: ADMIT_LISTEN ":70000": port must be a number from 0 to 65535`},
		{"admin host with port", []string{"--admin-host", "admit.internal:9464"}, nil, `admit: --admin-host "admit.internal:9464": want host names such as admit.internal, without scheme or port, comma or space separated`},
		{"admin host one of two bad", nil, map[string]string{"ADMIT_ADMIN_HOST": "ops.example,http://x"}, `admit: ADMIT_ADMIN_HOST "ops.example,http://x": "http://x": want host names*`},
		{"http engine unknown", []string{"--http-engine", "h2"}, nil, `admit: --http-engine "h2": want admit or net/http`},
		{"metrics listen bad", []string{"--metrics-listen", "9464"}, nil, `admit: --metrics-listen "9464": missing port in address`},

		{"upstream missing", nil, map[string]string{"ADMIT_UPSTREAM": ""}, `admit: --upstream (or ADMIT_UPSTREAM) is required unless --demo is set`},
		{"upstream no scheme", []string{"--upstream", "localhost:3000"}, nil, `admit: --upstream "localhost:3000": scheme must be http or https`},
		{"upstream other scheme", nil, map[string]string{"ADMIT_UPSTREAM": "ftp://files"}, `admit: ADMIT_UPSTREAM "ftp://files": scheme must be http or https`},
		{"upstream no host", []string{"--upstream", "http:///x"}, nil, `admit: --upstream "http:///x": no host`},
		{"upstream with fragment", []string{"--upstream", "http://app/#top"}, nil, `admit: --upstream "http://app/#top": a fragment is never sent; remove it`},
		{"upstream unparsable", []string{"--upstream", "http://[::1"}, nil, `admit: --upstream "http://[::1": *`},

		{"route unknown group", []string{"--route", "admin=GET /admin/"}, nil, `admit: --route "admin=GET /admin/": unknown group "admin" (want webhook, link, health, or a group the config file's budgets name)`},
		{"route without group", []string{"--route", "GET /l/{id}"}, nil, `admit: --route "GET /l/{id}": want GROUP=PATTERN`},
		{"route empty pattern", []string{"--route", "link="}, nil, `admit: --route "link=": want GROUP=PATTERN`},
		{"route bad pattern", []string{"--route", "link=GET /l/{id"}, nil, `admit: --route "link=GET /l/{id": segment "{id" has no closing '}': a wildcard is a whole segment, such as {id} or {rest...}`},
		{"route wildcard in a segment", []string{"--route", "link=GET /l/x{id}"}, nil, `admit: --route "link=GET /l/x{id}": segment "x{id}": a wildcard is a whole segment, such as {id} or {rest...}`},
		{"route duplicate wildcard", []string{"--route", "link=GET /{x}/{x}"}, nil, `admit: --route "link=GET /{x}/{x}": segment "{x}": another segment has a wildcard of that name`},
		{"route rest wildcard not last", []string{"--route", "link=GET /a/{x...}/b"}, nil, `admit: --route "link=GET /a/{x...}/b": segment "{x...}": a {NAME...} wildcard takes the rest of the path, so it must be the last segment`},
		{"route bad wildcard name", []string{"--route", "link=GET /a/{a-b}"}, nil, `admit: --route "link=GET /a/{a-b}": segment "{a-b}": a wildcard's name is letters, digits and _, not starting with a digit`},
		{"route bad method", []string{"--route", "link=G@T /a"}, nil, `admit: --route "link=G@T /a": method "G@T" is not a method name (such as GET or POST)`},
		{"route without path", []string{"--route", "link=GET a"}, nil, `admit: --route "link=GET a": no path: want [METHOD ][HOST]/PATH, such as GET /l/{id}`},
		{"route unclean path", []string{"--route", "link=GET /a/../b"}, nil, `admit: --route "link=GET /a/../b": the path has an empty, . or .. segment: requests are cleaned before matching, so it would match none`},
		{"route duplicate", []string{"--route", "link=GET /l/{id}", "--route", "webhook=GET /l/{id}"}, nil, `admit: --route "webhook=GET /l/{id}": conflicts with route "link=GET /l/{id}": GET /l/{id} matches the same requests as GET /l/{id}`},
		{"route conflict", []string{"--route", "link=GET /a/{x}", "--route", "link=GET /{y}/b"}, nil, `admit: --route "link=GET /{y}/b": conflicts with route "link=GET /a/{x}": *`},
		{"route conflicts with config file", []string{"--config", "testdata/full.yaml", "--route", "link=GET /s/{id}"}, nil, `admit: --route "link=GET /s/{id}": conflicts with route "link=GET /s/{token}" (line 5: routes[1] of the config file): GET /s/{id} matches the same requests as GET /s/{token}`},
		{"route conflicts once folded", []string{"--route", "link=GET /A/{x}", "--route", "webhook=GET /a/{x}"}, nil, `admit: --route "webhook=GET /a/{x}": conflicts with route "link=GET /A/{x}" once case is folded, as upstreams that ignore case route them (lower-cased, both are GET /a/{x}); remove one of them, or set --route-folding=false`},
		{"route conflicts with config file once folded", []string{"--config", "testdata/full.yaml", "--route", "link=GET /S/{id}"}, nil, `admit: --route "link=GET /S/{id}": conflicts with route "link=GET /s/{token}" (line 5: routes[1] of the config file) once case is folded, as upstreams that ignore case route them (lower-cased, GET /s/{id} matches the same requests as GET /s/{token}); remove one of them, or set --route-folding=false`},
		{"config routes conflict once folded", []string{"--config", "testdata/folded-conflict.yaml"}, nil, `admit: --config "testdata/folded-conflict.yaml": line 3: routes[1] "GET /L/{id}": conflicts with route "link=GET /l/{id}" (line 2: routes[0]) once case is folded, as upstreams that ignore case route them (lower-cased, both are GET /l/{id}); remove one of them, or set --route-folding=false`},

		{"store unknown scheme", []string{"--store", "mysql://db/admit"}, nil, `admit: --store "mysql://db/admit": want memory or a postgres://, redis://, redis+cluster://, redis+sentinel:// or memcache:// URL`},
		{"store bare word", nil, map[string]string{"ADMIT_STORE": "postgres"}, `admit: ADMIT_STORE "postgres": want memory or a postgres://, redis://, redis+cluster://, redis+sentinel:// or memcache:// URL`},
		{"store memcache", []string{"--store", "memcache://cache:11211"}, nil, `admit: --store "memcache://cache:11211": memcache:// counts admit rls's fixed windows only; admit and admit auth decide token buckets, which memcached cannot decide atomically: want memory or a postgres:// or redis:// URL`},
		{"store password hidden", []string{"--store", "mysql://admit:s3cret@db/admit"}, nil, `admit: --store "mysql://admit:xxxxx@db/admit": want memory or a postgres://, redis://, redis+cluster://, redis+sentinel:// or memcache:// URL`},
		{"store unparsable password hidden", []string{"--store", "postgres://admit:s3cret@db:5432x/admit"}, nil, `admit: --store "postgres://(not shown: not a valid URL)": not a valid URL: percent-encode any '/', '?', '#', '@', ';' or space in the user name, the password and the parameters`},

		{"tls cert without key", []string{"--tls-cert", "cert.pem"}, nil, `admit: --tls-cert is set but --tls-key (ADMIT_TLS_KEY) is not: give both or neither`},
		{"tls key without cert env", nil, map[string]string{"ADMIT_TLS_KEY": "key.pem"}, `admit: ADMIT_TLS_KEY is set but --tls-cert (ADMIT_TLS_CERT) is not: give both or neither`},

		{"drain timeout bad", []string{"--drain-timeout", "25"}, nil, `admit: --drain-timeout "25": not a duration (such as "25s" or "1m")`},
		{"drain timeout zero", nil, map[string]string{"ADMIT_DRAIN_TIMEOUT": "0s"}, `admit: ADMIT_DRAIN_TIMEOUT "0s": must be positive`},
		{"drain timeout negative", []string{"--drain-timeout=-1s"}, nil, `admit: --drain-timeout "-1s": must be positive`},

		{"upstream health absolute URL", []string{"--upstream-health", "http://app/healthz"}, nil, `admit: --upstream-health "http://app/healthz": want a path on the upstream, such as /healthz`},
		{"upstream health relative", []string{"--upstream-health", "healthz"}, nil, `admit: --upstream-health "healthz": want a path on the upstream, such as /healthz`},
		{"store fail with memory", []string{"--store-fail", "open"}, nil, `admit: --store-fail is set but the store is memory: it applies to a shared store only`},
		{"store fail bad", []string{"--store", "redis://cache", "--store-fail", "opne"}, nil, `admit: --store-fail "opne": want closed, open or local`},
		{"store fail error", []string{"--store", "redis://cache", "--store-fail", "error"}, nil, `admit: --store-fail "error": error hands the decision back to the front, and admit is the front here: want closed (503), open or local`},
		{"store fail local without replicas", []string{"--store", "redis://cache", "--store-fail", "local"}, nil, `admit: --store-fail needs --replicas (ADMIT_REPLICAS): how many replicas share the store, so that each admits its share while it is down`},
		// The route checks divide by --replicas: before this case they
		// ran first and panicked on the documented mistake.
		{"store fail local without replicas with a route", []string{"--route", "link=GET /l/{id}", "--store", "redis://cache", "--store-fail", "local"}, nil, `admit: --store-fail needs --replicas (ADMIT_REPLICAS): how many replicas share the store, so that each admits its share while it is down`},
		{"store fail local without replicas with a postgres route", nil, map[string]string{"ADMIT_ROUTE": "webhook=POST /hooks/github", "ADMIT_STORE": "postgres://db/test", "ADMIT_STORE_FAIL": "local"}, `admit: ADMIT_STORE_FAIL needs --replicas (ADMIT_REPLICAS): how many replicas share the store, so that each admits its share while it is down`},
		{"replicas without local", []string{"--store", "redis://cache", "--replicas", "2"}, nil, `admit: --replicas is set but --store-fail is closed: it applies to --store-fail local only`},
		{"replicas zero", []string{"--store", "redis://cache", "--store-fail", "local", "--replicas", "0"}, nil, `admit: --replicas "0": must be at least 1`},
		{"store prefix with memory", []string{"--store-prefix", "x:"}, nil, `admit: --store-prefix is set but the store is memory: it applies to a redis store only`},
		{"store table env with redis", []string{"--store", "redis://cache"}, map[string]string{"ADMIT_STORE_TABLE": "t"}, `admit: ADMIT_STORE_TABLE is set but the store is redis: it applies to a postgres store only`},
		{"drain delay negative", []string{"--drain-delay=-1s"}, nil, `admit: --drain-delay "-1s": must not be negative`},
		{"log format unknown", []string{"--log-format", "logfmt"}, nil, `admit: --log-format "logfmt": want text or json`},
		{"log level unknown", nil, map[string]string{"ADMIT_LOG_LEVEL": "loud"}, `admit: ADMIT_LOG_LEVEL "loud": want debug, info, warn or error`},
		{"log level unknown flag", []string{"--log-level", "verbose"}, nil, `admit: --log-level "verbose": want debug, info, warn or error`},

		{"config file missing", []string{"--config", "testdata/missing.yaml"}, nil, `admit: --config "testdata/missing.yaml": no such file or directory`},
		{"config unknown budget field", []string{"--config", "testdata/unknown-field.yaml"}, nil, `admit: --config "testdata/unknown-field.yaml": line 3: budgets.link: unknown field "brust" (want algorithm, body_rate_grace, burst, charge_on_failure, exempt, exempt_keys_from, hold_timeout, inflight, ipv4_prefix, ipv6_prefix, key, key_authenticated, like, limit, max_body_bytes, max_clients, max_waiting, min_body_rate, on_missing, per_client, queue, rate, ratelimit_headers, ratelimit_headers_admitted, read_timeout, refusal_body, refusal_headers, refusal_problem_type, refusal_status, refusal_type, shared_burst, shared_rate, sync, sync_interval, window)`},
		{"config unknown top-level field", nil, map[string]string{"ADMIT_CONFIG": "testdata/unknown-top-level.yaml"}, `admit: ADMIT_CONFIG "testdata/unknown-top-level.yaml": line 1: the file: unknown field "listen" (want admin_hosts, allow_spellings, budgets, http_engine, routes, upgrades, upstream_profile)`},
		{"config group of its own without amounts", []string{"--config", "testdata/unknown-group.yaml"}, nil, `admit: --config "testdata/unknown-group.yaml": line 2: budgets.admin: a group of its own needs its rate and burst (or algorithm: fixed-window with a limit and window), or like: webhook, link or health`},
		{"config unknown route group", []string{"--config", "testdata/unknown-route-group.yaml"}, nil, `admit: --config "testdata/unknown-route-group.yaml": line 2: routes[0]: unknown group "admin" (want webhook, link, health, or a group the config file's budgets name)`},
		{"config bad route pattern", []string{"--config", "testdata/bad-route-pattern.yaml"}, nil, `admit: --config "testdata/bad-route-pattern.yaml": line 2: routes[0] "GET /l/{id": segment "{id" has no closing '}': a wildcard is a whole segment, such as {id} or {rest...}`},
		{"config zero burst", []string{"--config", "testdata/zero-burst.yaml"}, nil, `admit: --config "testdata/zero-burst.yaml": line 3: budgets.health.burst: must be at least 1, got 0`},
		{"config negative rate", []string{"--config", "testdata/negative-rate.yaml"}, nil, `admit: --config "testdata/negative-rate.yaml": line 3: budgets.link.rate: "-1" is not a positive rate (.inf for no limit)`},
		{"config bad duration", []string{"--config", "testdata/bad-duration.yaml"}, nil, `admit: --config "testdata/bad-duration.yaml": line 3: budgets.webhook.read_timeout: "ten seconds" is not a duration (such as "10s"; 0 for none)`},
		{"config not YAML", []string{"--config", "testdata/not-yaml.yaml"}, nil, `admit: --config "testdata/not-yaml.yaml": line 1: not valid YAML: did not find expected node content`},
		{"config two documents", []string{"--config", "testdata/two-documents.yaml"}, nil, `admit: --config "testdata/two-documents.yaml": more than one YAML document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.args, tt.env)
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			got := err.Error()
			if prefix, reason, ok := strings.Cut(tt.want, "*"); ok {
				if !strings.HasPrefix(got, prefix) || len(got) == len(prefix) || !strings.Contains(got[len(prefix):], reason) {
					t.Errorf("got %q, want %q followed by a reason containing %q", got, prefix, reason)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBudgetFields reads each budget field from a config file: a value given
// must mean something (a field left out keeps the default), and a 0 timeout
// or body cap means none.
func TestBudgetFields(t *testing.T) {
	tests := []struct {
		yaml string // the link group's fields
		want admit.Budget
		err  string // empty: valid
	}{
		{"{}", admit.Budget{}, ""},
		{"read_timeout: 0\n    max_body_bytes: 0", admit.Budget{ReadTimeout: -1, MaxBodyBytes: -1}, ""},
		{"hold_timeout: 2m", admit.Budget{HoldTimeout: 2 * time.Minute}, ""},
		{"min_body_rate: 1000", admit.Budget{MinBodyRate: 1000}, ""},
		{"min_body_rate: 0", admit.Budget{MinBodyRate: -1}, ""},
		{"body_rate_grace: 2s", admit.Budget{BodyRateGrace: 2 * time.Second}, ""},
		{"body_rate_grace: 0", admit.Budget{}, "line 2: budgets.link: body_rate_grace 0 (none) with min_body_rate 100: a body's first bytes take time to arrive, so nearly every body would be cut; want a positive body_rate_grace, or min_body_rate 0 (none)"},
		{"min_body_rate: 0\n    body_rate_grace: 0", admit.Budget{MinBodyRate: -1, BodyRateGrace: -1}, ""},
		{"rate: .inf", admit.Budget{Rate: rate.Inf}, ""},
		{"rate: 600r/m", admit.Budget{Rate: 10}, ""},
		{"ratelimit_headers: x-ratelimit\n    ratelimit_headers_admitted: true", admit.Budget{XRateLimit: true, FieldsOnAdmitted: true}, ""},
		{"ratelimit_headers: draft", admit.Budget{}, ""},
		{"queue: 5", admit.Budget{Queue: 5}, ""},
		{"queue: 0", admit.Budget{}, ""},
		{"burst: 1\n    queue: 20\n    max_waiting: 64", admit.Budget{Burst: 1, Queue: 20, MaxWaiting: 64}, ""},
		{"queue: -1", admit.Budget{}, "line 3: budgets.link.queue: must be at least 0"},
		{"max_waiting: 0", admit.Budget{}, "line 3: budgets.link.max_waiting: must be at least 1, got 0"},
		{"max_waiting: 8", admit.Budget{}, "line 2: budgets.link: max_waiting 8 applies to a group with a queue"},
		{"refusal_status: 503", admit.Budget{RefusalStatus: 503}, ""},
		{"refusal_status: 302", admit.Budget{}, "line 2: budgets.link: refusal_status 302, want 400 to 599, or 0 for 429"},
		{"refusal_status: 600", admit.Budget{}, "line 2: budgets.link: refusal_status 600, want 400 to 599, or 0 for 429"},
		{"refusal_status: -1", admit.Budget{}, "line 3: budgets.link.refusal_status: must be at least 0"},
		{"refusal_body: \"{group} is busy; retry in {retry_after} s\"", admit.Budget{RefusalBody: "{group} is busy; retry in {retry_after} s"}, ""},
		{"refusal_type: html\n    refusal_body: <p>{group}</p>", admit.Budget{RefusalType: "text/html; charset=utf-8", RefusalBody: "<p>{group}</p>"}, ""},
		{"refusal_type: problem\n    refusal_problem_type: https://example.com/busy", admit.Budget{RefusalType: "application/problem+json", RefusalProblemType: "https://example.com/busy"}, ""},
		{"refusal_type: text", admit.Budget{RefusalType: "text/plain; charset=utf-8"}, ""},
		{"refusal_headers: {cache-control: no-store, Link: </busy>}", admit.Budget{RefusalHeaders: http.Header{"Cache-Control": {"no-store"}, "Link": {"</busy>"}}}, ""},
		{"refusal_type: json", admit.Budget{}, `line 3: budgets.link.refusal_type: "json": want text, html or problem`},
		{"refusal_type: html", admit.Budget{}, "line 2: budgets.link: refusal_body is needed for an HTML refusal_type"},
		{"refusal_problem_type: https://example.com/busy", admit.Budget{}, "line 2: budgets.link: refusal_problem_type applies to a problem document's refusal_type only"},
		{"refusal_body: \"{path}\"", admit.Budget{}, `line 2: budgets.link: refusal_body has an unknown placeholder "path": want group, status, retry_after or outcome in braces`},
		{"refusal_headers: {Set-Cookie: a=b}", admit.Budget{}, `line 2: budgets.link: refusal_headers "Set-Cookie": a refusal sets no cookie`},
		{"refusal_headers: {Transfer-Encoding: chunked}", admit.Budget{}, `line 2: budgets.link: refusal_headers "Transfer-Encoding": a hop-by-hop field speaks for the connection, not the answer`},
		{"refusal_headers: {X-Note: [a, b]}", admit.Budget{}, "line 3: budgets.link.refusal_headers.X-Note: want a single value"},
		{"refusal_headers: no-store", admit.Budget{}, "line 3: budgets.link.refusal_headers: want a map of header names to values"},
		{"ratelimit_headers: ietf", admit.Budget{}, `line 3: budgets.link.ratelimit_headers: "ietf": want draft (RateLimit-Policy and RateLimit) or x-ratelimit (X-RateLimit-Limit, -Remaining, -Reset)`},
		{"rate: 100/m", admit.Budget{Rate: rate.Limit(100.0 / 60)}, ""},
		{"shared_rate: 1000/h", admit.Budget{SharedRate: rate.Limit(1000.0 / 3600)}, ""},
		{"rate: 600/d", admit.Budget{}, `line 3: budgets.link.rate: "600/d": unknown unit "d": want s, m or h (such as 10r/s or 100/m)`},
		{"rate: 0", admit.Budget{}, `line 3: budgets.link.rate: "0" is not a positive rate (.inf for no limit)`},
		{"rate: 0r/s", admit.Budget{}, `line 3: budgets.link.rate: "0r/s" is not a positive rate (.inf for no limit)`},
		{"rate: -1", admit.Budget{}, `line 3: budgets.link.rate: "-1" is not a positive rate (.inf for no limit)`},
		{"rate: .nan", admit.Budget{}, `line 3: budgets.link.rate: ".nan" is not a rate: want a number per second, N/s, N/m or N/h (nginx's Nr/s, Nr/m), or .inf for no limit`},
		{"shared_rate: -0.5", admit.Budget{}, `line 3: budgets.link.shared_rate: "-0.5" is not a positive rate (.inf for no limit)`},
		{"shared_burst: 0", admit.Budget{}, "line 3: budgets.link.shared_burst: must be at least 1, got 0"},
		{"per_client: 0", admit.Budget{}, "line 3: budgets.link.per_client: must be at least 1, got 0"},
		{"inflight: -3", admit.Budget{}, "line 3: budgets.link.inflight: must be at least 1, got -3"},
		{"max_clients: 0", admit.Budget{}, "line 3: budgets.link.max_clients: must be at least 1, got 0"},
		{"max_clients: 3000000000", admit.Budget{}, "line 2: budgets.link: max_clients 3000000000, want between 1 and 2^31-1"},
		{"read_timeout: -1s", admit.Budget{}, "line 3: budgets.link.read_timeout: must not be negative, got -1s"},
		{"max_body_bytes: -1", admit.Budget{}, "line 3: budgets.link.max_body_bytes: must not be negative, got -1"},
		{"burst: fast", admit.Budget{}, "line 3: budgets.link.burst: not a whole number"},
		{"rate: fast", admit.Budget{}, `line 3: budgets.link.rate: "fast" is not a rate: want a number per second, N/s, N/m or N/h (nginx's Nr/s, Nr/m), or .inf for no limit`},
		{"charge_on_failure: maybe", admit.Budget{}, "line 3: budgets.link.charge_on_failure: not a boolean (use true or false)"},
		{"burst: [1, 2]", admit.Budget{}, "line 3: budgets.link.burst: want a single value"},
		{"burst: 5\n    burst: 6", admit.Budget{}, "line 4: budgets.link.burst: given twice (first on line 3)"},
		{"algorithm: fixed-window\n    limit: 5\n    window: 1m", admit.Budget{Algorithm: admit.FixedWindow, Limit: 5, Window: time.Minute}, ""},
		{"algorithm: fixed_window\n    limit: 5\n    window: 1m", admit.Budget{Algorithm: admit.FixedWindow, Limit: 5, Window: time.Minute}, ""},
		{"algorithm: gcra", admit.Budget{Algorithm: admit.TokenBucket}, ""},
		{"algorithm: leaky", admit.Budget{}, `line 3: budgets.link.algorithm: unknown algorithm "leaky": want token-bucket or fixed-window`},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			path := writeConfig(t, "budgets:\n  link:\n    "+tt.yaml+"\n")
			c, err := parse(t, []string{"--config", path}, nil)
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), fmt.Sprintf("admit: --config %q: ", path))
			}
			if got != tt.err {
				t.Fatalf("error: got %q, want %q", got, tt.err)
			}
			if err == nil && !reflect.DeepEqual(c.Budgets[admit.GroupLink], tt.want) {
				t.Errorf("link budget: got %+v, want %+v", c.Budgets[admit.GroupLink], tt.want)
			}
		})
	}
}

// TestFileSyntaxLines: a YAML syntax error names the line it is on. yaml
// names the line where the construct around it began, counted from 0 for
// some errors, so a tab on line 4 came out as line 3, and a key indented
// wrongly on line 4 as line 1.
func TestFileSyntaxLines(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"tab in the indentation", "budgets:\n  link:\n    rate: 1\n\tburst: 2\n",
			"line 4: not valid YAML: found a tab character that violates indentation; YAML indents with spaces only"},
		{"key indented less than its siblings", "budgets:\n  link:\n    rate: 1\n   burst: 2\n",
			"line 4: not valid YAML: did not find expected key"},
		{"key indented more than its siblings", "budgets:\n  link:\n    rate: 1\n      burst: 2\n",
			"line 4: not valid YAML: mapping values are not allowed in this context"},
		{"braces of a pattern in a flow map", "routes:\n  - {group: link, pattern: GET /l/{id}}\n",
			`line 2: not valid YAML: did not find expected ',' or '}'; in {...}, quote a value that holds braces, such as pattern: "GET /l/{id}"`},
		{"unterminated quote", "budgets:\n  link:\n    rate: \"1\n    burst: 2\n",
			"line 3: not valid YAML: found unexpected end of stream"},
		{"on the first line", "routes: [\n", "line 1: not valid YAML: did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.yaml)
			_, err := parse(t, []string{"--config", path}, nil)
			if got, want := fmt.Sprint(err), fmt.Sprintf("admit: --config %q: %s", path, tt.want); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// TestVersionFlag: --version takes a boolean as the other boolean flags do,
// so --version=0 or =F runs the server rather than printing the version.
func TestVersionFlag(t *testing.T) {
	tests := []struct {
		args    []string
		printed bool
		err     string
	}{
		{[]string{"--version"}, true, ""},
		{[]string{"--version=true"}, true, ""},
		{[]string{"--version=1"}, true, ""},
		{[]string{"--version=T"}, true, ""},
		{[]string{"--version=false"}, false, ""},
		{[]string{"--version=0"}, false, ""},
		{[]string{"--version=F"}, false, ""},
		{[]string{"--version=FALSE"}, false, ""},
		{[]string{"--version", "--version=false"}, false, ""},
		{[]string{"--version=maybe"}, false, `admit: --version "maybe": not a boolean (use true or false)`},
		{[]string{"--version=yes", "--listen", "x"}, false, `admit: --version "yes": not a boolean (use true or false)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			_, err := Parse(tt.args, func(k string) string { return map[string]string{"ADMIT_UPSTREAM": app}[k] }, &out)
			switch {
			case tt.printed && !errors.Is(err, ErrVersion):
				t.Errorf("got %v, want the version printed", err)
			case !tt.printed && tt.err == "" && err != nil:
				t.Errorf("got %v, want the configuration", err)
			case tt.err != "" && fmt.Sprint(err) != tt.err:
				t.Errorf("got %v, want %q", err, tt.err)
			}
			if got := out.Len() > 0; got != tt.printed {
				t.Errorf("printed %q, want the version printed: %v", out.String(), tt.printed)
			}
		})
	}
}

func TestParseConfigHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := Parse([]string{"-h"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want %v", err, flag.ErrHelp)
	}
	usage := out.String()
	for _, o := range Options {
		want := append([]string{"--" + o.Name}, o.Envs()...)
		for _, a := range o.aliases {
			want = append(want, "--"+a)
		}
		if o.Def != "" {
			want = append(want, fmt.Sprintf("default %q", o.Def))
		}
		for _, w := range want {
			if w != "" && !strings.Contains(usage, w) {
				t.Errorf("usage does not mention %q:\n%s", w, usage)
			}
		}
	}
}

func TestParseConfigQuietOnError(t *testing.T) {
	// Errors are returned, not printed: the caller prints one line.
	var out bytes.Buffer
	_, err := Parse([]string{"--nope"}, func(string) string { return "" }, &out)
	if err == nil {
		t.Fatal("got no error for an unknown flag")
	}
	if out.Len() != 0 {
		t.Errorf("output: got %q, want none", out.String())
	}
}

// FuzzParseConfig feeds arbitrary values to each flag: the parser must never
// panic, and every error must start with "admit: " and name the flag.
func FuzzParseConfig(f *testing.F) {
	// Seeds: a setting index (modulo the number of settings) and a value,
	// valid or a near miss, for the settings with the most parsing.
	seed := func(name, value string) {
		for i, o := range Options {
			if o.Name == name {
				f.Add(uint8(i), value)
			}
		}
	}
	seed("route", "link=GET /l/{id}")
	seed("route", "link=GET /l/{id")
	seed("route", "=")
	seed("route", "health=GET example.com/{$}")
	seed("trusted-proxy", "10.0.0.0/8 ::1")
	seed("trusted-proxy", "::ffff:0.0.0.0/96")
	seed("proxy-protocol-from", ",,\t,")
	seed("store", "postgres://:@/")
	seed("store", "redis://u:p@[::1")
	seed("upstream", "http://[fe80::1%25eth0]:80/")
	seed("listen", "[::1]:")
	seed("drain-timeout", "9223372036854775807ns")
	seed("demo", "T")
	seed("version", "0")     // a boolean: false, so the server's configuration is parsed
	seed("version", "maybe") // refused, naming --version
	seed("log-level", "verbose")
	f.Fuzz(func(t *testing.T, index uint8, value string) {
		s := Options[int(index)%len(Options)]
		if s.Name == "config" {
			return // a path: the file system, not the parser
		}
		env := func(k string) string {
			if k == "ADMIT_UPSTREAM" {
				return app
			}
			return ""
		}
		_, err := Parse([]string{"--" + s.Name + "=" + value}, env, io.Discard)
		if errors.Is(err, ErrVersion) {
			return // --version=true: printed, not refused
		}
		if err != nil && !strings.HasPrefix(err.Error(), "admit: --"+s.Name+" ") {
			t.Errorf("error does not name --%s: %v", s.Name, err)
		}
	})
}

// TestRestartOnlyCoversEveryOption checks that every setting is either
// applied by a reload or compared by it, and refused by name.
func TestRestartOnlyCoversEveryOption(t *testing.T) {
	// The front is built afresh by every reload, so what it reads is applied.
	reloaded := map[string]bool{"route": true, "version": true, "upstream-profile": true, "allow-spellings": true}
	for _, o := range Options {
		if reloaded[o.Name] == (o.running != nil) {
			t.Errorf("--%s: a reload applies it: %v; a reload compares it: %v; want exactly one", o.Name, reloaded[o.Name], o.running != nil)
		}
	}
}

// writeConfig writes yaml to a config file of the test's own and returns
// its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admit.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFirstBadGroupInFile names, of several groups the door refuses, the
// one the file gives first, whatever their names' order.
func TestFirstBadGroupInFile(t *testing.T) {
	path := writeConfig(t, `budgets:
  zz: {algorithm: fixed-window, limit: 5}
  aa: {algorithm: fixed-window, limit: 5}
routes:
  - {group: aa, pattern: "GET /a"}
  - {group: zz, pattern: "GET /z"}
`)
	_, err := parse(t, []string{"--config", path}, nil)
	want := fmt.Sprintf("admit: --config %q: line 2: budgets.zz: a fixed-window group needs a positive limit and window", path)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// FuzzWholeConfig feeds flags, environment variables and a config file
// together, as a deployment sets them: whatever the mix, Parse must never
// panic, and every error must be admit's own words, not a runtime's.
func FuzzWholeConfig(f *testing.F) {
	// Seeds: args one per line, the environment as NAME=value lines, and
	// the file's text (none when empty).
	f.Add("--route\nlink=GET /l/{id}\n--store\nredis://cache\n--store-fail\nlocal", "", "")
	f.Add("", "ADMIT_ROUTE=webhook=POST /hooks/github\nADMIT_STORE=postgres://db/test\nADMIT_STORE_FAIL=local", "")
	f.Add("--store\nredis://cache\n--store-fail\nlocal\n--replicas\n3", "", "budgets:\n  link:\n    burst: 1\nroutes:\n  - group: link\n    pattern: GET /l/{id}\n    cost: 2\n")
	f.Add("--store\npostgres://db/test", "ADMIT_STORE_FAIL=local\nADMIT_REPLICAS=2", "budgets:\n  webhook:\n    algorithm: fixed_window\n    limit: 1\n")
	f.Add("--demo", "ADMIT_TRUSTED_PROXY=10.0.0.0/8", "routes:\n  - group: health\n    pattern: GET /healthz\n")
	f.Add("--route\nlink=GET /l/{id}", "", "budgets:\n  link:\n    key: path:id\n")
	f.Add("--route\n=", "ADMIT_LISTEN=[::1]:", "not: [yaml")
	f.Fuzz(func(t *testing.T, args, env, file string) {
		var argv []string
		if args != "" {
			argv = strings.Split(args, "\n")
		}
		vars := map[string]string{"ADMIT_UPSTREAM": app}
		for line := range strings.SplitSeq(env, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "ADMIT_") && k != "ADMIT_CONFIG" {
				vars[k] = v
			}
		}
		if file != "" {
			path := filepath.Join(t.TempDir(), "admit.yaml")
			if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			argv = append(argv, "--config", path)
		}
		_, err := Parse(argv, func(k string) string { return vars[k] }, io.Discard)
		if err != nil && !errors.Is(err, ErrVersion) && !errors.Is(err, flag.ErrHelp) && !strings.HasPrefix(err.Error(), "admit: ") {
			t.Errorf("error not in admit's words: %v", err)
		}
	})
}

// TestFileOpsSettings: the file's admin_hosts and http_engine apply unless
// a flag or variable gives them, and a bad one names its line and field.
func TestFileOpsSettings(t *testing.T) {
	path := writeConfig(t, "admin_hosts: [Admit.Internal., \"a.example b.example\"]\nhttp_engine: net/http\n")
	c := mustParse(t, []string{"--config", path})
	if got := strings.Join(c.AdminHosts, " "); got != "admit.internal a.example b.example" || c.HTTPEngine != EngineNetHTTP {
		t.Errorf("from the file: got hosts %q, engine %q; want admit.internal a.example b.example, net/http", got, c.HTTPEngine)
	}
	c, err := parse(t, []string{"--config", path, "--http-engine", "admit"}, map[string]string{"ADMIT_ADMIN_HOST": "ops.example"})
	if err != nil || strings.Join(c.AdminHosts, " ") != "ops.example" || c.HTTPEngine != EngineAdmit {
		t.Errorf("flag and variable over the file: got hosts %q, engine %q, %v; want ops.example, admit", c.AdminHosts, c.HTTPEngine, err)
	}
	c = mustParse(t, []string{"--config", writeConfig(t, "admin_hosts: ops.example\n")})
	if strings.Join(c.AdminHosts, " ") != "ops.example" || c.HTTPEngine != EngineAdmit {
		t.Errorf("one name, engine left out: got hosts %q, engine %q; want ops.example, admit", c.AdminHosts, c.HTTPEngine)
	}
	for yaml, want := range map[string]string{
		"admin_hosts: [ok.example, \"admit.internal:9464\"]\n": `line 1: admin_hosts[1]: "admit.internal:9464": want host names`,
		"http_engine: h2\n": `line 1: http_engine: want admit or net/http`,
	} {
		if _, err := parse(t, []string{"--config", writeConfig(t, yaml)}, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %s", yaml, err, want)
		}
	}
}
