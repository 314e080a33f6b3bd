package testrouter

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// The kinds that switch protocols: servers that answer a request saying
// Upgrade: h2c with 101 and then serve every HTTP/2 stream of the
// connection, so that a test can hold what reaches the app of an upgrade
// sent through admit. They serve the package's routes (GET /l/<id>,
// counted, and GET /u/...) and control endpoints, but are not among
// Kinds, whose tests are about how each router reads a path.
const (
	// Hypercorn is a bare ASGI app on hypercorn, which switches to HTTP/2
	// when a bodiless request's last Upgrade line is h2c, in any case,
	// whatever its Connection says.
	Hypercorn Kind = "hypercorn"
	// NghttpxGo is nghttpx, nghttp2's HTTP/2 front server, in front of the
	// Go ServeMux app: nghttpx switches a cleartext connection to HTTP/2
	// on Upgrade: h2c with HTTP2-Settings and passes each stream on over
	// HTTP/1.1. The counters live in the Go app.
	NghttpxGo Kind = "nghttpx-go"
)

// SwitchingKinds returns the kinds that switch to HTTP/2 on Upgrade: h2c.
func SwitchingKinds() []Kind { return []Kind{Hypercorn, NghttpxGo} }

// nghttpxBin is Debian's nghttpx, of nghttp2-proxy.
const nghttpxBin = "/usr/sbin/nghttpx"

// hypercornCommand readies the Hypercorn kind (fails t when Debian's
// hypercorn is missing) and returns the command that runs it on a port.
func hypercornCommand(t testing.TB, src string) func(port int) *exec.Cmd {
	t.Helper()
	if err := hypercornReady(); err != nil {
		testneed.Missing(t, "testrouter: %v; the Hypercorn kind needs Debian's hypercorn: apt-get install python3-hypercorn", err)
	}
	return func(port int) *exec.Cmd {
		// The flags as for Flask: Debian's packages only, an unbuffered
		// log, no bytecode in the source tree.
		cmd := exec.Command(python, "-I", "-u", "-B", "app.py", strconv.Itoa(port))
		cmd.Dir = filepath.Join(src, "hypercorn")
		return cmd
	}
}

// hypercornReady checks once per test binary that Debian's Python imports
// hypercorn.
var hypercornReady = sync.OnceValue(func() error {
	out, err := exec.Command(python, "-I", "-c", "import hypercorn.asyncio").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s cannot import hypercorn (%v): %s", python, err, bytes.TrimSpace(out))
	}
	return nil
})

// nghttpxCommand returns the command that runs nghttpx on a port in front
// of the app on appPort: one process (killed with its group as the apps
// are), no TLS on the frontend, no configuration file but its flags, and
// its log on stderr, which serve keeps.
func nghttpxCommand(t testing.TB, dir string, appPort int) func(port int) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(nghttpxBin); err != nil {
		testneed.Missing(t, "testrouter: %v; the %s kind needs Debian's nghttpx: apt-get install nghttp2-proxy", err, NghttpxGo)
	}
	return func(port int) *exec.Cmd {
		return exec.Command(nghttpxBin, "--conf=/dev/null", "--single-process", "--workers=1",
			fmt.Sprintf("--frontend=127.0.0.1,%d;no-tls", port), fmt.Sprintf("--backend=127.0.0.1,%d", appPort),
			"--errorlog-file=/dev/stderr", "--pid-file="+filepath.Join(dir, "nghttpx.pid"))
	}
}
