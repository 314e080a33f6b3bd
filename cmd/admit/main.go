// Command admit is a rate-limiting reverse proxy for the anonymous routes of
// an app: signed webhooks, public links and health probes. It is package
// server's Main; see that package, admit -h and docs/operators.md. Unless
// the environment sets them, it runs with GOGC=400 and a soft memory limit
// of three quarters of the memory it may use (gc.go). Run as ratelimit, it
// is admit rls reading envoyproxy/ratelimit's environment (docs/rls.md).
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/admitgo/admit/server"
)

func main() {
	tuneGC(os.LookupEnv, os.DirFS("/"))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once
	}()
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == server.ReferenceName {
		args = server.AsReference(args)
	}
	os.Exit(server.Main(ctx, args, os.Getenv, os.Stdout, os.Stderr))
}
