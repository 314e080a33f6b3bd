package testrouter

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// haproxyBin is Debian's HAProxy.
const haproxyBin = "/usr/sbin/haproxy"

// haproxyStatusConf runs HAProxy with one thread, so that it takes one
// core of a loaded machine at most, logs to stderr, which the harness
// keeps, and answers the harness on a status frontend. Run with -db, it
// stays in the foreground as one process without a master, the child the
// harness kills, and writes no file.
//
// The status frontend answers in HTTP mode whatever mode the front
// frontend runs in, since a TCP frontend cannot answer. HAProxy binds every
// frontend before it serves any, so the status answer means all are bound.
// %pid, doubled for Sprintf, is HAProxy's process id in its log-format
// syntax.
const haproxyStatusConf = `# Written by testrouter for one test.
global
    nbthread 1
    log stderr format raw local0 info

defaults
    log global
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend status
    mode http
    bind 127.0.0.1:%[1]d
    no log
    http-request return status 200 content-type application/json lf-string '{"pid":%%pid}' if { path %[2]s }
    http-request deny

`

// haproxyConf is the front frontend, after haproxyStatusConf.
const haproxyConf = `frontend front
    mode %[1]s
    option %[1]slog
    bind 127.0.0.1:%[2]d
%[3]s    default_backend server

backend server
    mode %[1]s
    source %[5]s
    server server %[4]s
`

// haproxyCommand returns, for one HAProxy kind, the function that readies
// the command running HAProxy in front of backend on a port and a status
// port, with its configuration in dir and its log in logPath.
func haproxyCommand(kind FrontKind) func(t testing.TB, dir, logPath, backend string) func(port, status int) *exec.Cmd {
	// HTTP mode adds X-Forwarded-For; TCP mode sends the PROXY header, and
	// leaves HTTP alone.
	mode, frontend, server := "http", "    option forwardfor\n", ""
	if kind == HAProxyProxyV2 {
		mode, frontend, server = "tcp", "", " send-proxy-v2"
	}
	return func(t testing.TB, dir, _, backend string) func(port, status int) *exec.Cmd {
		t.Helper()
		if _, err := os.Stat(haproxyBin); err != nil {
			testneed.Missing(t, "testrouter: %v; the %s front needs Debian's HAProxy: apt-get install haproxy", err, kind)
		}
		conf := filepath.Join(dir, "haproxy.cfg")
		return func(port, status int) *exec.Cmd {
			text := fmt.Sprintf(haproxyStatusConf, status, statusPath) + fmt.Sprintf(haproxyConf, mode, port, frontend, backend+server, FrontSource)
			if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
				t.Fatalf("testrouter: %v", err)
			}
			return exec.Command(haproxyBin, "-db", "-f", conf)
		}
	}
}
