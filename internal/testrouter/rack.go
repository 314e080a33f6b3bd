package testrouter

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// Debian's Ruby and puma, which ruby-actionpack and ruby-sinatra install
// for: a ruby first on PATH may be another build without them.
const (
	ruby = "/usr/bin/ruby"
	puma = "/usr/bin/puma"
)

// rubyEnv drops from the environment what would make Debian's Ruby load
// other gems than Debian's, or run the apps in another Rack environment.
var rubyEnv = []string{"RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH", "BUNDLE_GEMFILE", "APP_ENV", "RACK_ENV", "RAILS_ENV"}

// rackCommand readies what the Rails and Sinatra kinds need (fails t when
// it is missing) and returns the command that runs kind's config.ru on a
// port.
func rackCommand(t testing.TB, src string, kind Kind) func(port int) *exec.Cmd {
	t.Helper()
	if err := rackReady(); err != nil {
		testneed.Missing(t, "testrouter: %v; the %s kind needs Debian's Rails and Sinatra on puma: apt-get install ruby-actionpack ruby-sinatra puma", err, kind)
	}
	env := withoutEnv(os.Environ(), rubyEnv)
	return func(port int) *exec.Cmd {
		// Single mode, so that the app is the child the harness kills and
		// whose process id it asks for; and no config/puma.rb, so that the
		// command line is all of puma's configuration.
		cmd := exec.Command(puma, "--no-config", "--environment", "development",
			"--workers", "0", "--threads", "1:4",
			"--bind", "tcp://127.0.0.1:"+strconv.Itoa(port), "config.ru")
		cmd.Dir = filepath.Join(src, string(kind))
		cmd.Env = env
		return cmd
	}
}

// withoutEnv returns env without the variables named in names.
func withoutEnv(env, names []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// rackReady checks once per test binary that Debian's Ruby loads what the
// apps load, and that puma is there to run them.
var rackReady = sync.OnceValue(func() error {
	if _, err := os.Stat(puma); err != nil {
		return err
	}
	cmd := exec.Command(ruby, "-e", `require "action_controller"; require "sinatra/base"`)
	cmd.Env = withoutEnv(os.Environ(), rubyEnv)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s cannot load action_controller and sinatra (%v): %s", ruby, err, bytes.TrimSpace(out))
	}
	return nil
})
