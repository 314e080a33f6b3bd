package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/rlsd"
)

// Main is the admit command: it runs the subcommand or the server args
// name, with getenv as its environment, writing output to stdout and logs
// and errors to stderr, until ctx ends; it returns the process's exit code:
// 0, 1 for a failure, 2 for a command line or configuration it refuses. A
// SIGHUP meanwhile reloads the configuration.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := run(ctx, args, getenv, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
	}
	return config.ExitCode(err)
}

// usageError is the error that exits 2, as the server's commands write it.
type usageError = config.UsageError

// run is the whole program with its environment passed in, so that tests run
// it in-process: it serves until ctx ends, then drains and returns nil. A
// SIGHUP meanwhile reloads the configuration from args, getenv and the
// config file.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "explain":
			return explain(args[1:], getenv, stdout)
		case "validate":
			return validate(args[1:], getenv, stdout)
		case "schema":
			return schema(args[1:], getenv, stdout)
		case "rls":
			return rlsd.Run(ctx, args[1:], getenv, stdout, stderr)
		case "auth":
			return runAuth(ctx, args[1:], getenv, stdout, stderr)
		}
	}
	// SIGHUP reloads the configuration. Caught from here on, before startup
	// can take long (a store's first answer), so that an early one cannot
	// end the process; it is handled once the server serves.
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	defer signal.Stop(hangups)
	cfg, err := config.Parse(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, config.ErrVersion) {
		return nil
	}
	if err != nil {
		return usageError{Err: err}
	}
	cfg.Stderr = stderr
	log := newLogger(cfg, stderr)
	s, err := newServer(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.close()
	s.reparse = func() (config.Config, error) { return config.Parse(args, getenv, io.Discard) }
	s.hangups = hangups
	if err := s.listen(); err != nil {
		return err
	}
	if cfg.Demo {
		s.printDemo(stdout)
	}
	return s.serve(ctx)
}

// newLogger returns the logger of lifecycle events, in the format and at the
// level the configuration names.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	return config.NewLogger(cfg.LogFormat, cfg.LogLevel, w)
}
