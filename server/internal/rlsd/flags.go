package rlsd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// options are the settings of admit rls, and what reading them found.
type options struct {
	config.RLS
	fromEnv      []string         // admit rls's own variables read
	storeFrom    [2]string        // the flag or variables --store and --per-second-store came from
	caFrom       string           // the flag or variable --client-ca came from
	referenceEnv []string         // the reference's variables set, outside reference mode
	infos        []string         // in reference mode, the reference's variables that change nothing
	watchEvery   time.Duration    // tests shorten it
	now          func() time.Time // the clock of the certificate's reloads; nil: time.Now; tests set it
	ready        func(addresses)
	// xdsWait replaces the xDS client's wait between streams; nil: a
	// timer. Tests set it.
	xdsWait func(ctx context.Context, d time.Duration) bool
}

// parseFlags reads admit rls's settings with the proxy's option
// machinery (config.RLSOptions): each from its flag, else its ADMIT_RLS_
// variable, else in reference mode (--env envoy) envoyproxy/ratelimit's
// variables (applyReference), else its default. Every error names the flag
// or variables the value came from. With -h it writes the usage to out and
// returns flag.ErrHelp.
func parseFlags(args []string, getenv func(string) string, out io.Writer) (options, error) {
	o := options{watchEvery: watchInterval}
	set := config.NewOptionSet("admit rls", config.RLSOptions)
	if err := set.Parse("admit rls", args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			config.PrintRLSUsage(out)
		}
		return o, err
	}
	if set.FS.NArg() > 0 {
		return o, set.Unexpected(args, set.FS.Args())
	}
	// The mode is read before the values are applied, since the reference's
	// variables lie beneath admit rls's own; a mode neither admit nor envoy
	// is refused by Apply, in its variable's words.
	if mode, _, _, _ := set.Lookup(getenv, "env"); mode == envReference {
		given := func(flag string) (string, bool) {
			_, _, spelling, ok := set.Lookup(getenv, flag)
			return spelling, ok
		}
		var err error
		if set.Below, o.infos, err = applyReference(given, getenv); err != nil {
			return o, err
		}
	}
	if err := set.Apply(getenv, &o.RLS); err != nil {
		return o, err
	}
	for i, name := range []string{"store", "per-second-store"} {
		o.storeFrom[i] = "--" + name
		if from, ok := set.From(name); ok && from != "" {
			o.storeFrom[i] = from
		}
	}
	o.caFrom = "--client-ca"
	if from, ok := set.From("client-ca"); ok && from != "" {
		o.caFrom = from
	}
	for _, opt := range set.List {
		if from, ok := set.From(opt.Name); ok && slices.Contains(opt.Envs(), from) {
			o.fromEnv = append(o.fromEnv, from)
		}
	}
	if o.Env == envAdmit {
		for _, r := range refVars {
			if getenv(r.name) != "" {
				o.referenceEnv = append(o.referenceEnv, r.name)
			}
		}
	}
	return o, check(o.RLS, set)
}

// check checks what one value cannot: the caps' ranges, that the
// certificate and key go together, that a configuration is given.
func check(c config.RLS, set *config.OptionSetFor[config.RLS]) error {
	from := func(name string) string {
		if f, ok := set.From(name); ok {
			return f
		}
		return "--" + name
	}
	switch {
	case c.MaxConns < 1:
		return fmt.Errorf("admit rls: %s %d: must be at least 1", from("max-conns"), c.MaxConns)
	case c.MaxConnsPerClient < 0:
		return fmt.Errorf("admit rls: %s %d: must be 0 (no cap) or more", from("max-conns-per-client"), c.MaxConnsPerClient)
	}
	if err := config.CheckKeyPair(set, c.TLSCert, c.TLSKey); err != nil {
		return err
	}
	// Client certificates are asked for in the TLS handshake, and a name
	// is checked on a certificate the CA verified: without either, the
	// flag would check nothing, where envoyproxy/ratelimit ignores it.
	if c.ClientCA != "" && c.TLSCert == "" {
		return fmt.Errorf("admit rls: %s is set but --tls-cert (%s) is not: client certificates are asked for over TLS only", from("client-ca"), envName("tls-cert"))
	}
	if c.ClientSAN != "" && c.ClientCA == "" {
		return fmt.Errorf("admit rls: %s is set but --client-ca (%s) is not: without it no client certificate is asked for", from("client-san"), envName("client-ca"))
	}
	if c.PerSecondStore.Kind == storeurl.Memory {
		return fmt.Errorf("admit rls: %s \"memory\": want a postgres://, redis:// or memcache:// URL; leave it empty to count every limit on --store", from("per-second-store"))
	}
	return checkSource(c, from)
}

// checkSource checks that the configuration comes from one place, files
// or an xDS server, and that the xDS settings go together.
func checkSource(c config.RLS, from func(string) string) error {
	x := c.XDS
	switch {
	case c.Config != "" && x.Server != "":
		return fmt.Errorf("admit rls: %s and %s are both set: the configuration comes from files or from an xDS server, not both", from("config"), from("xds-server"))
	case c.Config == "" && x.Server == "":
		return fmt.Errorf("admit rls: --config is required (or %s): an envoyproxy/ratelimit YAML file or a directory of them; or --xds-server (%s)", envName("config"), envName("xds-server"))
	case x.Server == "":
		return nil
	case x.RetryMax < x.Retry:
		return fmt.Errorf("admit rls: %s %s is shorter than %s %s", from("xds-retry-max"), x.RetryMax, from("xds-retry"), x.Retry)
	case (x.ClientCert == "") != (x.ClientKey == ""):
		return fmt.Errorf("admit rls: %s and %s go together: set both or neither", from("xds-client-cert"), from("xds-client-key"))
	}
	// Without TLS these would check nothing, and a server reached in
	// cleartext where TLS was meant is a server anyone on the path can be.
	for _, f := range []struct{ name, v string }{{"xds-ca", x.CA}, {"xds-san", x.SAN}, {"xds-client-cert", x.ClientCert}} {
		if f.v != "" && !x.TLS {
			return fmt.Errorf("admit rls: %s is set but --xds-tls (%s) is not: it is used over TLS only", from(f.name), envName("xds-tls"))
		}
	}
	return nil
}

// envName is the environment variable of an admit rls flag: ADMIT_RLS_
// and the flag's name in capitals (see config.RLS's Front).
func envName(flag string) string { return config.EnvNameOf[config.RLS](flag) }

func (o options) headers() rls.Headers {
	if !o.Headers {
		return rls.Headers{}
	}
	return rls.Headers{Limit: o.LimitHeader, Remaining: o.RemainingHdr, Reset: o.ResetHeader}
}
