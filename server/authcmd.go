package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/admitgo/admit/server/internal/config"
)

// runAuth is the auth subcommand: the server as a decision service for a
// front's forward-auth requests (see authFront), or with validate first,
// the check of its configuration.
func runAuth(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	opts := slices.Concat(config.AuthOptions, config.Options)
	if len(args) > 0 && args[0] == "validate" {
		return validateAuth(args[1:], opts, getenv, stdout)
	}
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	defer signal.Stop(hangups)
	parse := func(out io.Writer) (config.Config, error) {
		return config.ParseAuth("admit auth", opts, args, getenv, out, config.PrintAuthUsage)
	}
	cfg, err := parse(stdout)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, config.ErrVersion) {
		return nil
	}
	if err != nil {
		return usageError{Err: err}
	}
	cfg.Stderr = stderr
	s, err := newServer(ctx, cfg, newLogger(cfg, stderr))
	if err != nil {
		return err
	}
	defer s.close()
	s.reparse = func() (config.Config, error) { return parse(io.Discard) }
	s.hangups = hangups
	if err := s.listen(); err != nil {
		return err
	}
	return s.serve(ctx)
}

// validateAuth is admit auth validate: validate for admit auth's
// configuration, which also says what the mode turns off.
func validateAuth(args []string, opts []config.Option, getenv func(string) string, out io.Writer) error {
	c, err := config.ParseAuth("admit auth validate", slices.Concat(opts, validateOptions), args, getenv, out, config.PrintAuthUsage)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, config.ErrVersion) {
		return nil
	}
	if err != nil {
		return usageError{Err: err}
	}
	if err := checked(c, out); err != nil {
		return err
	}
	fmt.Fprintln(out, "auth   in-flight caps and charge_on_failure are off: a forward-auth decision ends before the app answers, so every admitted request is charged; cap requests in flight at the front")
	fmt.Fprintln(out, "ok")
	return nil
}
