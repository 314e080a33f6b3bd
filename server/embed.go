package server

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/admitgo/admit/server/internal/config"
)

// Config is a checked configuration of the server, read as the admit
// command reads its own. Its zero value is not usable; get one from [Load].
type Config struct {
	cfg    config.Config
	args   []string
	getenv func(string) string
}

// Load reads a configuration from args, the admit command's flags without
// the program name (for example --config admit.yaml --upstream URL), with
// getenv as the environment (nil: none); --config names the same YAML file
// the command reads. An error names the flag, variable or file line at
// fault, in the configuration's own words.
func Load(args []string, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg, err := config.Parse(args, getenv, io.Discard)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, config.ErrVersion) {
		return nil, errors.New("admit: Load: -h and --version print and exit; they configure no server")
	}
	if err != nil {
		return nil, err
	}
	return &Config{cfg: cfg, args: args, getenv: getenv}, nil
}

// Server is the admit proxy: its listeners, door, routes and store, built
// from one [Config]. It is safe for concurrent use.
type Server struct {
	s      *server
	served atomic.Bool
}

// New builds a server from cfg, logging to log (nil: slog.Default()). It
// connects to a shared store and opens the access log, but listens on
// nothing until [Server.Serve]; it fails on configuration that only
// building can check (a certificate that does not load), never because the
// upstream or the store is down. Close releases what it opened.
func New(ctx context.Context, cfg *Config, log *slog.Logger) (*Server, error) {
	if cfg == nil || cfg.getenv == nil {
		return nil, errors.New("admit: New: a Config comes from Load")
	}
	if log == nil {
		log = slog.Default()
	}
	s, err := newServer(ctx, cfg.cfg, log)
	if err != nil {
		return nil, err
	}
	args, getenv := cfg.args, cfg.getenv
	s.reparse = func() (config.Config, error) { return config.Parse(args, getenv, io.Discard) }
	return &Server{s: s}, nil
}

// Handler returns what the proxy's listener serves: the front that puts a
// request into its canonical form and matches its routes, the door, and
// the proxy to the upstream, and starts the shared store's upkeep until
// Close. A program that serves it on a listener of its own goes without
// what Serve adds: the connection caps, the PROXY protocol, the metrics
// listener (/metrics, /admit/status, the admin API) and the drain.
func (s *Server) Handler() http.Handler {
	s.s.startUpkeep()
	return s.s.handler
}

// Serve listens on the configured addresses and serves until ctx ends or a
// listener fails, then drains as the command does on SIGTERM; it returns
// nil after a drain. It does not reload on SIGHUP: call [Server.Reload]. A
// server serves once: a second call returns an error.
func (s *Server) Serve(ctx context.Context) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("admit: Serve: this server has served already; make a new one with New")
	}
	if err := s.s.listen(); err != nil {
		return err
	}
	return s.s.serve(ctx)
}

// Reload reads the configuration again from the arguments, environment
// and file it was loaded from, and applies it as a SIGHUP does; a
// configuration it refuses leaves the last one serving, and the error says
// why.
func (s *Server) Reload() error { return s.s.reload() }

// Close releases what New opened. Call it after Serve has returned.
func (s *Server) Close() { s.s.close() }
