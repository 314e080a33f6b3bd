package server

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/opshost"
	"github.com/admitgo/admit/server/storeurl"
)

// rlsOptions are the settings of admit rls.
type rlsOptions struct {
	Env                       string // envAdmit or envReference
	Listen, MetricsListen     string
	HTTPListen                string // "": no HTTP listener
	MaxConns                  int
	MaxConnsPerClient         int
	Store                     storeurl.Store
	StoreTable, StorePrefix   string
	StoreFail                 quota.Failure
	TLSCert, TLSKey           string
	Config                    string
	Shadow, QuotaMode         bool
	Headers                   bool
	LimitHeader, RemainingHdr string
	ResetHeader               string
	LogLevel                  slog.Level
	LogFormat                 string        // text or json
	AdminHosts                []string      // names the metrics listener answers to beyond addresses and localhost
	fromEnv                   []string      // variables read
	referenceEnv              []string      // the reference's variables set, outside reference mode
	infos                     []string      // in reference mode, the reference's variables that change nothing
	watchEvery                time.Duration // tests shorten it
	ready                     func(rlsAddrs)
}

// parseRLSFlags reads admit rls's flags, and for each one not given its
// environment variable (ADMIT_RLS_ and the flag's name, see rlsEnvName);
// every error names the flag or variable.
func parseRLSFlags(args []string, getenv func(string) string, out io.Writer) (rlsOptions, error) {
	o := rlsOptions{watchEvery: rlsWatchEvery}
	fs := flag.NewFlagSet("admit rls", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { printRLSUsage(out, fs) }
	fs.StringVar(&o.Env, "env", envAdmit, "whose environment variables are read beside admit rls's own: admit (none) or envoy (envoyproxy/ratelimit's, below admit's; the default when run as ratelimit; see docs/rls.md)")
	fs.StringVar(&o.Listen, "listen", ":8081", "address of the gRPC service (envoyproxy/ratelimit's GRPC_HOST and GRPC_PORT); cleartext HTTP/2 (h2c) unless --tls-cert")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "127.0.0.1:9464", "address of /metrics, /healthz, /healthcheck and /rlconfig (envoyproxy/ratelimit's DEBUG_HOST and DEBUG_PORT)")
	fs.StringVar(&o.HTTPListen, "http-listen", "", "address of /healthcheck and /json, ShouldRateLimit over JSON (envoyproxy/ratelimit's HOST and PORT); empty: not served")
	fs.IntVar(&o.MaxConns, "max-conns", 4096, "connections the gRPC listener keeps open at most; newer ones are closed on arrival")
	fs.IntVar(&o.MaxConnsPerClient, "max-conns-per-client", 0, "connections one client (an IPv4 address or IPv6 /64) keeps open on the gRPC listener at most; 0: no cap, since a mesh's sidecar may carry every Envoy's connections from one address")
	storeURL := fs.String("store", "memory", "memory, postgres://..., redis://..., redis+cluster://... or redis+sentinel://... (rediss for TLS): where the counts live")
	fs.StringVar(&o.StoreTable, "store-table", "", "PostgreSQL table, optionally schema-qualified (default \"admit_quota\")")
	fs.StringVar(&o.StorePrefix, "store-prefix", "", "start of every Redis key (default \"admit:count:\"; envoyproxy/ratelimit's CACHE_KEY_PREFIX)")
	fail := fs.String("store-fail", "error", "what a request gets while the store cannot count: error (gRPC UNAVAILABLE, so Envoy's failure_mode_deny decides), closed (OVER_LIMIT), open (OK) or local (counted in this process's memory)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate (PEM); with --tls-key, serves gRPC over TLS")
	fs.StringVar(&o.TLSKey, "tls-key", "", "TLS private key (PEM)")
	fs.StringVar(&o.Config, "config", "", "envoyproxy/ratelimit YAML file, or a directory of them (one domain each); required")
	fs.BoolVar(&o.Shadow, "shadow", false, "answer OK overall whatever the limits say (envoyproxy/ratelimit's SHADOW_MODE)")
	fs.BoolVar(&o.QuotaMode, "quota-mode", false, "answer OK for over-limit descriptors (QUOTA_MODE)")
	fs.BoolVar(&o.Headers, "response-headers", false, "ask Envoy to add the limit headers (LIMIT_RESPONSE_HEADERS_ENABLED)")
	fs.StringVar(&o.LimitHeader, "limit-header", rls.DefaultHeaders.Limit, "name of the limit header (LIMIT_LIMIT_HEADER)")
	fs.StringVar(&o.RemainingHdr, "remaining-header", rls.DefaultHeaders.Remaining, "name of the remaining header (LIMIT_REMAINING_HEADER)")
	fs.StringVar(&o.ResetHeader, "reset-header", rls.DefaultHeaders.Reset, "name of the reset header (LIMIT_RESET_HEADER)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", "text", "text or json")
	var adminHosts []string
	fs.Func("admin-host", "names the metrics listener answers to besides an IP address, localhost and names under .localhost, comma or space separated; repeatable; a request with any other Host is refused with 421, so that a web page cannot reach it by DNS rebinding",
		func(v string) error { adminHosts = append(adminHosts, v); return nil })
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	from, err := o.applyEnv(fs, getenv)
	if err != nil {
		return o, err
	}
	if o.MaxConns < 1 {
		return o, fmt.Errorf("admit rls: %s %d: must be at least 1", from("max-conns"), o.MaxConns)
	}
	if o.MaxConnsPerClient < 0 {
		return o, fmt.Errorf("admit rls: %s %d: must be 0 (no cap) or more", from("max-conns-per-client"), o.MaxConnsPerClient)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("admit rls: unexpected argument %q", fs.Arg(0))
	}
	for _, a := range []struct{ flag, v string }{{"listen", o.Listen}, {"metrics-listen", o.MetricsListen}, {"http-listen", o.HTTPListen}} {
		if a.v == "" && a.flag == "http-listen" {
			continue
		}
		if _, err := config.ParseAddr(a.v); err != nil {
			return o, fmt.Errorf("admit rls: %s %q: %w", from(a.flag), a.v, err)
		}
	}
	if o.Store, err = storeurl.Parse(*storeURL); err != nil {
		return o, fmt.Errorf("admit rls: %s %q: %w", from("store"), storeurl.Redact(*storeURL), err)
	}
	if o.StoreFail, err = quota.ParseFailure(*fail); err != nil {
		return o, fmt.Errorf("admit rls: %s %q: want error, closed, open or local", from("store-fail"), *fail)
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return o, fmt.Errorf("admit rls: %s and %s go together", from("tls-cert"), from("tls-key"))
	}
	if o.Config == "" {
		return o, fmt.Errorf("admit rls: --config is required (or %s): an envoyproxy/ratelimit YAML file or a directory of them", rlsEnvName("config"))
	}
	if o.LogLevel, err = config.ParseLogLevel(*level); err != nil {
		return o, fmt.Errorf("admit rls: %s %q: %w", from("log-level"), *level, err)
	}
	if o.LogFormat != "text" && o.LogFormat != "json" {
		return o, fmt.Errorf("admit rls: %s %q: want text or json", from("log-format"), o.LogFormat)
	}
	for _, v := range adminHosts {
		names, err := opshost.ParseNames(v)
		if err != nil {
			return o, fmt.Errorf("admit rls: %s %q: %w", from("admin-host"), v, err)
		}
		o.AdminHosts = append(o.AdminHosts, names...)
	}
	return o, nil
}

// rlsEnvName is the environment variable of an admit rls flag: ADMIT_RLS_
// and the flag's name in capitals. The proxy's are ADMIT_ and its flag's,
// so that one environment can configure both without one taking the
// other's certificate, listener or failure policy.
func rlsEnvName(flag string) string {
	return "ADMIT_RLS_" + strings.TrimPrefix(config.EnvName(flag), "ADMIT_")
}

// applyEnv sets each flag of fs that args did not give from its
// environment variable, when set, then in reference mode (--env envoy)
// from envoyproxy/ratelimit's variables (applyReference). It records the
// variables read, and returns how an error names a flag's value: by the
// variables it came from, or as the flag.
func (o *rlsOptions) applyEnv(fs *flag.FlagSet, getenv func(string) string) (from func(flag string) string, err error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	byEnv := map[string]string{}
	from = func(flag string) string {
		if name, ok := byEnv[flag]; ok {
			return name
		}
		return "--" + flag
	}
	fs.VisitAll(func(f *flag.Flag) {
		name := rlsEnvName(f.Name)
		v := getenv(name)
		if set[f.Name] || v == "" || err != nil {
			return
		}
		set[f.Name], byEnv[f.Name], o.fromEnv = true, name, append(o.fromEnv, name)
		if fs.Set(f.Name, v) != nil {
			// The flag package's own words are "parse error". Only the
			// boolean and int flags can fail to parse; the rest are strings.
			want := "not a whole number"
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				want = "not a boolean (use true or false)"
			}
			err = fmt.Errorf("admit rls: %s %q: %s", name, v, want)
		}
	})
	if err != nil {
		return from, err
	}
	switch o.Env {
	case envReference:
		o.infos, err = applyReference(fs, set, getenv, byEnv)
	case envAdmit:
		for _, r := range refVars {
			if getenv(r.name) != "" {
				o.referenceEnv = append(o.referenceEnv, r.name)
			}
		}
	default:
		err = fmt.Errorf("admit rls: %s %q: want %s or %s", from("env"), o.Env, envAdmit, envReference)
	}
	return from, err
}

func (o rlsOptions) headers() rls.Headers {
	if !o.Headers {
		return rls.Headers{}
	}
	return rls.Headers{Limit: o.LimitHeader, Remaining: o.RemainingHdr, Reset: o.ResetHeader}
}

// rlsPlaceholders name the values of admit rls's flags in its usage, as
// the proxy's options do.
var rlsPlaceholders = map[string]string{
	"config": "FILE|DIR", "listen": "ADDR", "metrics-listen": "ADDR", "max-conns": "N", "max-conns-per-client": "N",
	"store": "STORE", "store-table": "TABLE", "store-prefix": "PREFIX", "store-fail": "POLICY",
	"tls-cert": "FILE", "tls-key": "FILE", "log-level": "LEVEL", "log-format": "FORMAT", "admin-host": "NAMES",
	"env": "NAME", "http-listen": "ADDR",
	"limit-header": "NAME", "remaining-header": "NAME", "reset-header": "NAME",
}

// printRLSUsage writes admit rls -h as the proxy's -h reads: each flag
// with its placeholder, its environment variable and its default.
func printRLSUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "Usage: admit rls --config FILE|DIR [flags]\n"+
		"       admit rls validate --config FILE|DIR [flags]   check the flags, environment and files without serving\n\n"+
		"admit rls is Envoy's rate limit service (ShouldRateLimit) on envoyproxy/ratelimit's\n"+
		"configuration files and admit's stores.\n"+
		"Each flag may also be set by the environment variable shown; the flag wins.\n\n")
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		if p, ok := rlsPlaceholders[f.Name]; ok {
			arg = p
		}
		fmt.Fprintf(w, "  --%s", f.Name)
		if arg != "" {
			fmt.Fprintf(w, " %s", strings.ToUpper(arg))
		}
		notes := "env " + rlsEnvName(f.Name)
		if f.DefValue != "" && f.DefValue != "false" {
			notes += fmt.Sprintf("; default %q", f.DefValue)
		}
		fmt.Fprintf(w, "\n    \t%s (%s)\n", usage, notes)
	})
}
