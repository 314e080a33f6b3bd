package rlsd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/admitgo/admit/quota/memcachequota"
	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// validate is admit rls validate, and under ratelimit the counterpart
// of envoyproxy/ratelimit's config_check: it checks the flags, the
// environment and the configuration files as startup does, without
// listening or connecting, and prints the limits as /rlconfig does. A
// refusal exits 2, naming the variable or the file, line and field.
func validate(args []string, getenv func(string) string, stdout io.Writer) error {
	o, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return config.UsageError{Err: err}
	}
	var cfg *rls.Config
	if o.XDS.Server == "" {
		if cfg, err = rls.Load(o.Config); err != nil {
			return config.UsageError{Err: err}
		}
	} else if _, err := xdsCredentials(o); err != nil {
		return config.UsageError{Err: err}
	}
	if err := checkOffline(o); err != nil {
		return config.UsageError{Err: err}
	}
	if o.Store.Kind.CountsOnly() {
		// The store's refusal of a token bucket, as startup meets it,
		// without connecting.
		if _, err := rls.New(rls.Options{Config: cfg, Limiter: memcachequota.NoBuckets{}, MeterProvider: noop.NewMeterProvider(),
			Logger: slog.New(slog.DiscardHandler)}); err != nil {
			return config.UsageError{Err: err}
		}
	}
	for _, info := range o.infos {
		fmt.Fprintln(stdout, "info  "+info)
	}
	if len(o.referenceEnv) > 0 {
		fmt.Fprintf(stdout, "warn  %s: %s\n", referenceUnread, strings.Join(o.referenceEnv, ","))
	}
	if cfg != nil {
		fmt.Fprint(stdout, cfg.Dump())
	} else {
		fmt.Fprintf(stdout, "info  the configuration comes from the xDS server at %s when admit rls runs; not fetched\n", o.XDS.Server)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

// checkOffline runs what startup refuses before it connects: the stores'
// URLs with their TLS files, and the gRPC listener's certificate and
// client CA, in startup's words.
func checkOffline(o options) error {
	for i, st := range []storeurl.Store{o.Store, o.PerSecondStore} {
		if st.Kind == "" {
			continue
		}
		if err := st.Check(); err != nil {
			return config.StoreURLError("admit rls", o.storeFrom[i], st.URL, err)
		}
	}
	_, err := serverTLS(o, noop.NewMeterProvider(), slog.New(slog.DiscardHandler))
	return err
}
