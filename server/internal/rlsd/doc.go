// Package rlsd is the admit rls daemon: Envoy's rate limit service
// (package rls) served as a process, the command server.Main runs for
// `admit rls` and, under the name ratelimit, for envoyproxy/ratelimit's
// deployments. It reads its settings from one option table
// (config.RLSOptions: flags, ADMIT_RLS_ variables and, in reference mode,
// envoyproxy/ratelimit's variables, mapped by refVars), opens its store,
// and with --per-second-store a second one, as the proxy does (package
// store), serves gRPC with admit's options
// (package grpcserver), /metrics, the health pages and /rlconfig on an
// operations listener (package ops) and, on --http-listen, /healthcheck
// and /json; it reloads its configuration files on SIGHUP and when they
// change, and on SIGTERM drains as the proxy drains (package drain),
// its calls in flight given --drain-timeout.
//
// It is internal: the service is embedded through package rls, on any
// gRPC server; the daemon is a command, reached through server.Main as
// validate and explain are.
package rlsd
