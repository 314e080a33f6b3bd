// Package runner stands in for envoyproxy/ratelimit's in-process runner
// (src/service_cmd/runner) when TestReferenceSuite runs the reference's
// integration suite against admit rls: NewRunner, Run, Stop and
// GetStatsStore keep the runner's API, and Run starts the admit binary as
// a child process instead of the reference's server.
//
// The child gets the settings as the reference's environment variables,
// each named by its envconfig tag on settings.Settings, with
// ADMIT_RLS_ENV=envoy, and nothing of the test's environment but PATH
// and SSL_CERT_FILE. The stats store the suite reads is a view of the
// child's /stats on the debug listener (see store).
//
// It is built inside a copy of the reference's module and is no part of
// admit's.
package runner

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gostats "github.com/lyft/gostats"

	"github.com/envoyproxy/ratelimit/src/settings"
)

// binaryVar names the admit binary the runner starts.
const binaryVar = "ADMIT_SUITE_BINARY"

// Runner is one admit rls process, started by Run and stopped by Stop.
type Runner struct {
	settings settings.Settings
	store    *store

	mu      sync.Mutex // guards the following fields
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool
}

// NewRunner returns the runner of s, not yet started.
func NewRunner(s settings.Settings) Runner {
	host := s.DebugHost
	if host == "" || host == "0.0.0.0" {
		host = "localhost"
	}
	return Runner{settings: s, store: newStore(fmt.Sprintf("http://%s:%d/stats", host, s.DebugPort))}
}

// GetStatsStore returns the stats the suite reads, from the child's
// /stats.
func (runner *Runner) GetStatsStore() gostats.Store { return runner.store }

// Run starts admit rls and returns when it exits.
func (runner *Runner) Run() {
	bin := os.Getenv(binaryVar)
	if bin == "" {
		panic(binaryVar + " is not set")
	}
	cmd := exec.Command(bin, "rls")
	cmd.Env = Environ(runner.settings)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	runner.mu.Lock()
	if runner.stopped {
		runner.mu.Unlock()
		return
	}
	if err := cmd.Start(); err != nil {
		runner.mu.Unlock()
		panic(fmt.Sprintf("start %s rls: %v", bin, err))
	}
	runner.cmd, runner.exited = cmd, make(chan struct{})
	exited := runner.exited
	runner.mu.Unlock()
	err := cmd.Wait()
	close(exited)
	if err != nil {
		fmt.Fprintf(os.Stderr, "admit rls exited: %v\n", err)
	}
}

// Stop ends admit rls with SIGTERM, as a Deployment stops it, and waits
// until it exits, so that the next runner finds the ports free.
func (runner *Runner) Stop() {
	runner.mu.Lock()
	runner.stopped = true
	cmd, exited := runner.cmd, runner.exited
	runner.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// Environ is the child's environment: every field of s that has an
// envconfig tag, as the reference would read it, with ADMIT_RLS_ENV=envoy.
func Environ(s settings.Settings) []string {
	env := []string{"ADMIT_RLS_ENV=envoy", "PATH=" + os.Getenv("PATH")}
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		env = append(env, "SSL_CERT_FILE="+f)
	}
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		name := v.Type().Field(i).Tag.Get("envconfig")
		if name == "" {
			continue
		}
		if val := envValue(v.Field(i)); val != "" {
			env = append(env, name+"="+val)
		}
	}
	return env
}

// envValue spells f as envconfig parses it; the empty string for a value
// that is unset.
func envValue(f reflect.Value) string {
	if d, ok := f.Interface().(time.Duration); ok {
		return d.String()
	}
	switch f.Kind() {
	case reflect.String:
		return f.String()
	case reflect.Bool:
		return strconv.FormatBool(f.Bool())
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10)
	case reflect.Float32:
		return strconv.FormatFloat(f.Float(), 'g', -1, 32)
	case reflect.Float64:
		return strconv.FormatFloat(f.Float(), 'g', -1, 64)
	case reflect.Slice:
		return strings.Join(f.Interface().([]string), ",")
	case reflect.Map:
		m := f.Interface().(map[string]string)
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			pairs = append(pairs, k+":"+m[k])
		}
		return strings.Join(pairs, ",")
	}
	panic(fmt.Sprintf("settings field of kind %s has no spelling", f.Kind()))
}
