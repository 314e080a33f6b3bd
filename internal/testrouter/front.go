package testrouter

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// FrontKind names a proxy that runs in front of the server under test, as
// operators put one there, so that a test can check what the server makes
// of a client that talks to the proxy. Only the constants below are kinds;
// StartFront fails the test on any other.
type FrontKind string

const (
	// NginxFront is nginx with the configuration most guides give:
	// proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for, which
	// appends the client's address to whatever X-Forwarded-For the client
	// sent. Everything else keeps nginx's defaults: it drops header names
	// with an underscore and passes the others, Forwarded included, on
	// untouched.
	NginxFront FrontKind = "nginx"
	// HAProxyForwardFor is HAProxy in HTTP mode with option forwardfor,
	// which adds an X-Forwarded-For line of its own, with the client's
	// address, after any the client sent. It passes header names with an
	// underscore on.
	HAProxyForwardFor FrontKind = "haproxy-forwardfor"
	// HAProxyProxyV2 is HAProxy in TCP mode, an L4 balancer: it opens each
	// connection to the server with a PROXY protocol v2 header naming the
	// client, and then passes the client's bytes on as they came.
	HAProxyProxyV2 FrontKind = "haproxy-proxy-v2"
)

// FrontKinds returns every FrontKind.
func FrontKinds() []FrontKind { return []FrontKind{NginxFront, HAProxyForwardFor, HAProxyProxyV2} }

// FrontSource is the address every front proxy connects to the server
// from, whatever address the client used: the address the server must
// trust as a proxy, or expect PROXY headers from. It is set in each
// proxy's configuration rather than left to the kernel, so that tests may
// rely on it.
const FrontSource = "127.0.0.1"

// Front is one running front proxy, as StartFront returns it; the zero
// Front is not usable.
type Front struct {
	// URL is where clients connect: http://127.0.0.1:port, with no
	// trailing slash. Clients may connect from any loopback address.
	URL string
	// Addr is URL's host and port, for raw connections.
	Addr string
	// Kind is the kind of proxy running.
	Kind FrontKind

	proc *proc
}

// statusPath is where a front proxy answers, on a port of its own, with its
// process id. The proxy's own port passes everything to the server, so
// readiness is asked elsewhere, and no request of the harness reaches the
// server under test.
const statusPath = "/__front/pid"

// StartFront runs a front proxy of kind on a free loopback port, passing
// every connection to the server at backend (host:port), returns once it
// answers, and kills it when t ends. It fails t, saying what to install,
// when the proxy is missing. It does not wait for backend, which the test
// starts first.
func StartFront(t testing.TB, kind FrontKind, backend string) *Front {
	t.Helper()
	var command func(t testing.TB, dir, logPath, backend string) func(port, status int) *exec.Cmd
	switch kind {
	case NginxFront:
		command = frontNginxCommand
	case HAProxyForwardFor, HAProxyProxyV2:
		command = haproxyCommand(kind)
	default:
		t.Fatalf("testrouter: unknown front kind %q; want one of %v", kind, FrontKinds())
	}
	dir := t.TempDir()
	name := "front-" + string(kind)
	logPath := filepath.Join(dir, name+".log")
	client := &http.Client{
		Timeout:   controlTimeout,
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	}
	p, port := serveFront(t, client, name, logPath, command(t, dir, logPath, backend))
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return &Front{URL: "http://" + addr, Addr: addr, Kind: kind, proc: p}
}

// LogTail returns the end of the proxy's log (its errors, and a line for
// each request it passed on), for failure messages.
func (f *Front) LogTail() string { return string(f.proc.logTail()) }

// serveFront is serve for a front proxy: it starts the command for two
// free ports, the proxy's and its status port, and waits until the status
// port answers with the started process's id. A bind that fails on the
// first attempt is tried once more with other ports, as serve does.
func serveFront(t testing.TB, c *http.Client, name, logPath string, command func(port, status int) *exec.Cmd) (*proc, int) {
	t.Helper()
	return serveFrontAs(t, c, name, logPath, func(port, status int) (*exec.Cmd, int) { return command(port, status), 0 })
}

// serveFrontAs is serveFront for a proxy whose status port answers with
// the number command returns beside the command (0: the process's id).
func serveFrontAs(t testing.TB, c *http.Client, name, logPath string, command func(port, status int) (*exec.Cmd, int)) (*proc, int) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port, status := freePort(t), freePort(t)
		for status == port {
			status = freePort(t)
		}
		cmd, id := command(port, status)
		p := start(t, name, logPath, cmd)
		if id == 0 {
			id = p.cmd.Process.Pid
		}
		err := p.waitReady(c, baseURL(status)+statusPath, id)
		if err == nil {
			return p, port
		}
		if attempt == 1 && p.bindFailed() {
			t.Logf("testrouter: %s could not bind 127.0.0.1:%d or :%d; trying other ports", name, port, status)
			continue
		}
		t.Fatalf("testrouter: %s on 127.0.0.1:%d: %v\n%s", name, port, err, p.logTail())
	}
}

// frontNginxConf runs nginx as one foreground process with its files under
// the test's directory, as nginxConf does. proxy_pass has no URI, so nginx
// sends the request target on as the client sent it; proxy_bind pins the
// source address to FrontSource. The access log, in the error log's file,
// shows what nginx sent as X-Forwarded-For.
const frontNginxConf = `# Written by testrouter for one test.
daemon off;
master_process off;
%[1]s
pid "%[2]s/nginx.pid";
error_log "%[3]s" info;

events {
    worker_connections 256;
}

http {
    log_format front '$remote_addr "$request" $status sent X-Forwarded-For "$proxy_add_x_forwarded_for"';
    access_log "%[3]s" front;
    client_body_temp_path "%[2]s/client_body";
    proxy_temp_path "%[2]s/proxy";
    fastcgi_temp_path "%[2]s/fastcgi";
    uwsgi_temp_path "%[2]s/uwsgi";
    scgi_temp_path "%[2]s/scgi";

    server {
        listen 127.0.0.1:%[5]d;
        access_log off;
        location = %[7]s {
            default_type application/json;
            return 200 '{"pid":$pid}';
        }
    }

    server {
        listen 127.0.0.1:%[4]d;

        location / {
            proxy_pass http://%[6]s;
            proxy_bind %[8]s;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
    }
}
`

// frontNginxCommand returns the command that runs nginx in front of backend
// on a port and a status port, with its files in dir/front-nginx and its
// logs in logPath.
func frontNginxCommand(t testing.TB, dir, logPath, backend string) func(port, status int) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(nginxBin); err != nil {
		testneed.Missing(t, "testrouter: %v; the nginx front needs Debian's nginx: apt-get install nginx", err)
	}
	prefix := filepath.Join(dir, "front-nginx")
	if err := os.Mkdir(prefix, 0o755); err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	conf := filepath.Join(prefix, "nginx.conf")
	user := "" // as in nginxCommand: single-process nginx never changes user
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	return func(port, status int) *exec.Cmd {
		text := fmt.Sprintf(frontNginxConf, user, prefix, logPath, port, status, backend, statusPath, FrontSource)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		return exec.Command(nginxBin, "-p", prefix+"/", "-c", conf, "-e", logPath)
	}
}
