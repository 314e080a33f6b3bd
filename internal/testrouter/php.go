package testrouter

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// phpBin is Debian's php-cli, for which the Symfony packages install: a php
// first on PATH may be another build without them.
const phpBin = "/usr/bin/php"

// phpCommand readies the PHP app (fails t when PHP or Symfony is missing)
// and returns the command that runs PHP's built-in server on a port with
// the front controller as its router script.
func phpCommand(t testing.TB, src string) func(port int) *exec.Cmd {
	t.Helper()
	if err := phpReady(); err != nil {
		testneed.Missing(t, "testrouter: %v; the PHP kind needs Debian's PHP and Symfony components: apt-get install php-cli php-symfony-routing php-symfony-http-foundation", err)
	}
	dir := filepath.Join(src, "php")
	state := filepath.Join(t.TempDir(), "state.json")
	// With PHP_CLI_SERVER_WORKERS the server forks workers, and the hits
	// answer would carry a worker's process id rather than the one serve
	// waits for.
	env := append(withoutEnv(os.Environ(), []string{"PHP_CLI_SERVER_WORKERS"}), "ROUTER_STATE="+state)
	return func(port int) *exec.Cmd {
		// -t names the document root the router script lies in, so that
		// /index.php/l/abc is that script with the path info /l/abc.
		cmd := exec.Command(phpBin, "-S", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "-t", dir, "index.php")
		cmd.Dir = dir
		cmd.Env = env
		return cmd
	}
}

// phpReady checks once per test binary that Debian's PHP loads the Symfony
// components the app requires.
var phpReady = sync.OnceValue(func() error {
	const check = `require_once '/usr/share/php/Symfony/Component/HttpFoundation/autoload.php';
require_once '/usr/share/php/Symfony/Component/Routing/autoload.php';
new Symfony\Component\Routing\Matcher\UrlMatcher(new Symfony\Component\Routing\RouteCollection(), new Symfony\Component\Routing\RequestContext());
Symfony\Component\HttpFoundation\Request::create('/');`
	out, err := exec.Command(phpBin, "-r", check).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s cannot load Symfony Routing and HttpFoundation (%v): %s", phpBin, err, bytes.TrimSpace(out))
	}
	return nil
})
