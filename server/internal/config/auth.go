package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/canon"
)

// ParseAuth reads the configuration of admit auth (or of its validate,
// named by name) as ParseWith does, and refuses what has no meaning when
// admit decides for a front instead of forwarding (see checkAuth).
func ParseAuth(name string, opts []Option, args []string, getenv func(string) string, out io.Writer, usage func(io.Writer)) (Config, error) {
	c, err := ParseWith(name, opts, args, getenv, out, usage)
	if err != nil {
		return Config{}, err
	}
	c.Auth = true
	if err := c.checkAuth(name); err != nil {
		return Config{}, err
	}
	return c, nil
}

// checkAuth refuses the settings that speak of what admit forwards, since
// in admit auth the front forwards the client's own request, and the
// limits that need the app's answer, which a forward-auth decision ends
// before. Each error names the setting as the user gave it.
func (c Config) checkAuth(name string) error {
	forwards := func(flag, what string) error {
		return fmt.Errorf("%s: --%s (%s) is set, but %s decides for a front and forwards nothing: %s", name, flag, EnvName(flag), name, what)
	}
	switch {
	case len(c.TrustedProxies) == 0:
		return fmt.Errorf("%s: --trusted-proxy (%s) is required: it names the fronts (nginx, Caddy, Traefik, HAProxy) whose forwarded request admit reads; a request from any other peer is refused", name, EnvName("trusted-proxy"))
	case c.Upstream != nil:
		return forwards("upstream", "the front proxies to the app")
	case c.Demo:
		return forwards("demo", "it has no demo upstream")
	case c.UpstreamHealth != "":
		return forwards("upstream-health", "the front probes the app")
	case len(c.PassHeaders) > 0:
		return forwards("pass-header", "the front chooses the headers the app receives")
	case !slices.Equal(c.Upgrades, strings.Split(DefaultUpgrades, ",")):
		return forwards("upgrade", "the front chooses which upgrades reach the app")
	case c.EscapedSlashes == canon.Decode:
		return forwards("escaped-slashes", "decode would match a path the front never forwards; use reject or keep")
	case c.DenyStatus != 0 && (c.DenyStatus < 400 || c.DenyStatus > 599):
		return fmt.Errorf("%s: --deny-status (%s) %d: want a status from 400 to 599 (403 for nginx's auth_request)", name, EnvName("deny-status"), c.DenyStatus)
	case c.GRPCListen != "" && c.GRPCListen == c.Listen && !strings.HasSuffix(c.Listen, ":0"):
		return fmt.Errorf("%s: --grpc-listen (%s) %s is --listen's address: Envoy's Check needs a listener of its own", name, EnvName("grpc-listen"), c.GRPCListen)
	}
	groups := slices.Sorted(func(yield func(admit.Group) bool) {
		for g := range c.Budgets {
			if !yield(g) {
				return
			}
		}
	})
	for _, g := range groups {
		b := c.Budgets[g]
		field := ""
		switch {
		case b.PerClient != 0:
			field = fieldPerClient
		case b.Inflight != 0:
			field = fieldInflight
		case b.Charge == admit.ChargeOnFailure:
			field = fieldChargeOnFailure
		}
		if field != "" {
			return fmt.Errorf("%s: %s: line %d: budgets.%s.%s: %w", name, c.file, c.budgetLines[g], g, field, errAuthAnswer)
		}
		if b.Queue > 0 {
			return fmt.Errorf("%s: %s: line %d: budgets.%s.%s: %w", name, c.file, c.budgetLines[g], g, FieldQueue, errAuthQueue)
		}
	}
	return nil
}

// errAuthAnswer explains why a limit that needs the app's answer is refused
// in admit auth.
var errAuthAnswer = errors.New("a forward-auth decision ends before the app answers, so admit can neither hold an in-flight slot nor see the status; leave it out, and cap requests in flight at the front (nginx limit_conn, HAProxy maxconn)")

// errAuthQueue explains why the delay mode is refused in admit auth.
var errAuthQueue = errors.New("a front gives up on a decision that waits (HAProxy's and Envoy's timeouts are a second or less), and a wait given up is refunded, so a front that fails open would forward the request uncharged; use the front's own delay (nginx's limit_req without nodelay)")

// authUnapplied are the fields admit auth does not apply, which validate
// and the admin API leave out: the caps and charge it turns off, and the
// body's bounds, since it sees no body.
var authUnapplied = []string{fieldPerClient, fieldInflight, fieldChargeOnFailure, fieldReadTimeout, fieldMaxBodyBytes, fieldMinBodyRate, fieldBodyRateGrace, fieldHoldTimeout}

// authBudget is b as admit auth decides it: no in-flight caps and every
// request charged, since the decision ends before the app answers. A
// group charged on failure (the built-in webhook group) would otherwise
// never be charged at all.
func authBudget(b admit.Budget) admit.Budget {
	b.PerClient, b.Inflight = math.MaxInt32, math.MaxInt32
	b.Charge = admit.ChargeAlways
	return b
}

// AuthOptions are admit auth's own flags, beside the server's.
var AuthOptions = []Option{
	{Name: "deny-status", arg: "STATUS", Usage: "answer every refusal with STATUS (400 to 599) instead of the door's 429 or 503, as nginx's auth_request needs 401 or 403 to refuse; Admit-Status and Retry-After still say why and when; default: the door's own",
		Set:     func(c *Config, v string) (err error) { c.DenyStatus, err = parseCount(v, 0); return err },
		running: func(c Config) any { return c.DenyStatus }},
	{Name: "grpc-listen", arg: "ADDR", Usage: "also serve Envoy's ext_authz Check (envoy.service.auth.v3.Authorization) and gRPC health on ADDR, over TLS with --tls-cert, cleartext HTTP/2 otherwise; the client is the Check's source address, believed only from a --trusted-proxy caller; default: none",
		Set:     func(c *Config, v string) (err error) { c.GRPCListen, err = ParseAddr(v); return err },
		running: func(c Config) any { return c.GRPCListen }},
	{Name: "envoy-http-prefix", arg: "PREFIX", Usage: "answer requests under PREFIX on the forward-auth listener as Envoy's HTTP ext_authz (its http_service path_prefix) sends them: the original request line after PREFIX, the client from X-Forwarded-For, which Envoy must pass (allowed_headers); default: none",
		Set:     func(c *Config, v string) (err error) { c.EnvoyHTTPPrefix, err = parsePrefix(v); return err },
		running: func(c Config) any { return c.EnvoyHTTPPrefix }},
}

// parsePrefix reads --envoy-http-prefix: segments of unreserved characters,
// since Envoy puts it before the original path as it is, and a request
// whose path only an escape or a dot segment puts under it is not Envoy's.
func parsePrefix(v string) (string, error) {
	segs := strings.Split(v, "/")
	if len(segs) < 2 || segs[0] != "" {
		return "", errors.New("want a path such as /envoy")
	}
	unreserved := func(r rune) bool {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r)
	}
	for _, s := range segs[1:] {
		if s == "" || s == "." || s == ".." || strings.ContainsFunc(s, func(r rune) bool { return !unreserved(r) }) {
			return "", errors.New("want segments of letters, digits, '-', '.', '_' and '~', each after one '/' and none after the last, such as /envoy")
		}
	}
	return v, nil
}

// PrintAuthUsage writes admit auth's usage.
func PrintAuthUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: admit auth --trusted-proxy CIDR [flags]\n"+
		"       admit auth validate --trusted-proxy CIDR [flags]\n\n"+
		"admit auth decides for a front that keeps proxying: nginx's auth_request,\n"+
		"Caddy's forward_auth, Traefik's ForwardAuth, HAProxy's Lua action of\n"+
		"docs/integrations.md. It reads the original request\n"+
		"from X-Forwarded-Method and X-Forwarded-Uri (with X-Forwarded-Host and\n"+
		"X-Forwarded-Proto), or X-Original-Method and X-Original-URI (or an absolute\n"+
		"X-Original-URL), sent by a --trusted-proxy, each field once, and answers 200 to admit it or\n"+
		"the refusal (429 or 503, or --deny-status) with Retry-After; Admit-Status\n"+
		"names the outcome either way. With --grpc-listen it also answers Envoy's\n"+
		"ext_authz Check, the client being the Check's source address; with\n"+
		"--envoy-http-prefix, Envoy's HTTP ext_authz under that prefix. Only a\n"+
		"--trusted-proxy is believed, in every form. It takes the server's routes,\n"+
		"budgets and stores; what only a forwarding proxy does (--upstream,\n"+
		"--upgrade, --pass-header, in-flight caps, charge_on_failure) is refused.\n\n")
	PrintOptions(w, AuthOptions)
	PrintOptions(w, Options)
}
