// Command admit is a rate-limiting reverse proxy for the anonymous routes of
// an app: signed webhooks, public links and health probes. It is package
// server's Main; see that package, admit -h and docs/operators.md. Unless
// the environment sets them, it runs with GOGC=400 and a soft memory limit
// of three quarters of the memory it may use (gc.go).
package main

import (
	"context"
	"os"
	"os/signal"
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
	os.Exit(server.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
