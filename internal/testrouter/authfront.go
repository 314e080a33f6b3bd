package testrouter

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// AuthKind is a front proxy that asks admit auth before proxying each
// request, configured as deploy/auth documents it.
type AuthKind string

const (
	// NginxAuth is nginx with auth_request, deploy/auth/nginx.conf.
	NginxAuth AuthKind = "nginx-auth-request"
	// CaddyAuth is Caddy with forward_auth, deploy/auth/Caddyfile.
	CaddyAuth AuthKind = "caddy-forward-auth"
	// HAProxyAuth is HAProxy with the Lua action of deploy/auth/admit.lua,
	// deploy/auth/haproxy.cfg.
	HAProxyAuth AuthKind = "haproxy-lua"
)

// AuthKinds returns every AuthKind.
func AuthKinds() []AuthKind { return []AuthKind{NginxAuth, CaddyAuth, HAProxyAuth} }

// The addresses the documented configurations name, which StartAuthFront
// replaces with the test's.
const (
	docAdmit  = "127.0.0.1:9090"
	docApp    = "127.0.0.1:3000"
	docListen = "8080"
	// docLua is where deploy/auth/haproxy.cfg loads admit.lua from, and
	// docAsk where it passes the Lua action's requests on to admit.
	docLua = "/etc/haproxy/admit.lua"
	docAsk = "127.0.0.1:9091"
)

// caddyBin is Debian's Caddy.
const caddyBin = "/usr/bin/caddy"

// StartAuthFront runs kind on a free loopback port with its documented
// configuration, asking admit auth at auth (host:port) and proxying what it
// admits to app (host:port), and returns once it answers. It fails t,
// saying what to install, when the proxy is missing.
func StartAuthFront(t testing.TB, kind AuthKind, auth, app string) *Front {
	t.Helper()
	return startAuthFront(t, kind, auth, app, DocumentedAuth(t, kind))
}

// FailOpen returns the documented configuration of kind with the one edit
// its comments describe to fail open when admit cannot answer; false when
// kind documents none. It fails t when the line to edit is not there.
func FailOpen(t testing.TB, kind AuthKind) (string, bool) {
	t.Helper()
	edits := map[AuthKind][2]string{
		NginxAuth:   {"#   error_page 500 = @app;", "error_page 500 = @app;"},
		HAProxyAuth: {"    http-request return status 503 if !admit_answered\n", "    # http-request return status 503 if !admit_answered\n"},
	}
	e, ok := edits[kind]
	if !ok {
		return "", false
	}
	doc := DocumentedAuth(t, kind)
	if strings.Count(doc, e[0]) != 1 {
		t.Fatalf("testrouter: the %s configuration no longer holds the fail-open line %q once", kind, e[0])
	}
	return strings.Replace(doc, e[0], e[1], 1), true
}

// StartAuthFrontWith is StartAuthFront with the configuration doc, the
// documented one edited.
func StartAuthFrontWith(t testing.TB, kind AuthKind, auth, app, doc string) *Front {
	t.Helper()
	return startAuthFront(t, kind, auth, app, doc)
}

func startAuthFront(t testing.TB, kind AuthKind, auth, app, doc string) *Front {
	t.Helper()
	doc = strings.NewReplacer(docAdmit, auth, docApp, app).Replace(doc)
	dir := t.TempDir()
	name := "front-" + string(kind)
	logPath := filepath.Join(dir, name+".log")
	client := &http.Client{Timeout: controlTimeout, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	var command func(port, status int) (*exec.Cmd, int)
	switch kind {
	case NginxAuth:
		nginx := nginxAuthCommand(t, dir, logPath, doc)
		command = func(port, status int) (*exec.Cmd, int) { return nginx(port, status), 0 }
	case CaddyAuth:
		command = caddyAuthCommand(t, dir, doc)
	case HAProxyAuth:
		haproxy := haproxyAuthCommand(t, dir, doc)
		command = func(port, status int) (*exec.Cmd, int) { return haproxy(port, status), 0 }
	default:
		t.Fatalf("testrouter: unknown auth front %q; want one of %v", kind, AuthKinds())
	}
	p, port := serveFrontAs(t, client, name, logPath, command)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return &Front{URL: "http://" + addr, Addr: addr, Kind: FrontKind(kind), proc: p}
}

// DocumentedAuth returns the configuration deploy/auth documents for kind.
func DocumentedAuth(t testing.TB, kind AuthKind) string {
	t.Helper()
	file := map[AuthKind]string{NginxAuth: "nginx.conf", CaddyAuth: "Caddyfile", HAProxyAuth: "haproxy.cfg"}[kind]
	return readDeployAuth(t, file)
}

// readDeployAuth returns the file deploy/auth holds under name.
func readDeployAuth(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "auth", name))
	if err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	return string(b)
}

// moduleRoot returns the directory of the module's go.mod, above the
// test's working directory.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatalf("testrouter: no go.mod above the working directory")
		}
		dir = up
	}
}

// nginxAuthConf wraps the documented blocks in what a test's nginx needs:
// one foreground process, files under the test's directory, a log line per
// request and the status server.
const nginxAuthConf = `# Written by testrouter for one test.
daemon off;
master_process off;
%[1]s
pid "%[2]s/nginx.pid";
error_log "%[3]s" info;

events {
    worker_connections 256;
}

http {
    log_format front '$remote_addr "$request" $status admit=$admit_status';
    access_log "%[3]s" front;
    client_body_temp_path "%[2]s/client_body";
    proxy_temp_path "%[2]s/proxy";
    fastcgi_temp_path "%[2]s/fastcgi";
    uwsgi_temp_path "%[2]s/uwsgi";
    scgi_temp_path "%[2]s/scgi";

    server {
        listen 127.0.0.1:%[4]d;
        access_log off;
        location = %[5]s {
            default_type application/json;
            return 200 '{"pid":$pid}';
        }
    }

%[6]s
}
`

func nginxAuthCommand(t testing.TB, dir, logPath, doc string) func(port, status int) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(nginxBin); err != nil {
		testneed.Missing(t, "testrouter: %v; the nginx auth front needs Debian's nginx: apt-get install nginx", err)
	}
	prefix := filepath.Join(dir, "nginx")
	if err := os.Mkdir(prefix, 0o755); err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	conf := filepath.Join(prefix, "nginx.conf")
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	return func(port, status int) *exec.Cmd {
		blocks := strings.Replace(doc, "listen "+docListen+";", fmt.Sprintf("listen 127.0.0.1:%d;", port), 1)
		text := fmt.Sprintf(nginxAuthConf, user, prefix, logPath, status, statusPath, blocks)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		return exec.Command(nginxBin, "-p", prefix+"/", "-c", conf, "-e", logPath)
	}
}

// caddyAuthGlobal is what a test's Caddy needs before the documented site:
// no admin endpoint, no certificates, files under the test's directory.
// Caddy has no placeholder for its process id, so the status site answers
// a number the harness chose, passed in the environment.
const caddyAuthGlobal = `{
	admin off
	auto_https off
	storage file_system %[1]q
}

http://127.0.0.1:%[2]d {
	respond %[3]s "{\"pid\":{env.TESTROUTER_TOKEN}}" 200
}

`

func caddyAuthCommand(t testing.TB, dir, doc string) func(port, status int) (*exec.Cmd, int) {
	t.Helper()
	if _, err := os.Stat(caddyBin); err != nil {
		testneed.Missing(t, "testrouter: %v; the Caddy auth front needs Debian's caddy: apt-get install caddy", err)
	}
	conf := filepath.Join(dir, "Caddyfile")
	return func(port, status int) (*exec.Cmd, int) {
		token := 1 + rand.IntN(1<<30)
		// Any host, as the documented site, on the loopback interface alone.
		site := strings.Replace(doc, ":"+docListen+" {", fmt.Sprintf("http://:%d {\n\tbind 127.0.0.1", port), 1)
		text := fmt.Sprintf(caddyAuthGlobal, filepath.Join(dir, "caddy-data"), status, statusPath) + site
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		cmd := exec.Command(caddyBin, "run", "--adapter", "caddyfile", "--config", conf)
		cmd.Env = append(os.Environ(), "TESTROUTER_TOKEN="+strconv.Itoa(token), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
		return cmd, token
	}
}

// haproxyAuthCommand returns the command that runs HAProxy with the
// documented configuration after haproxyStatusConf, in a second file: the
// documented global and defaults sections add to the harness's, and apply
// to the documented frontends and backends alone. The documented Lua file
// is loaded from deploy/auth, where it is kept.
func haproxyAuthCommand(t testing.TB, dir, doc string) func(port, status int) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(haproxyBin); err != nil {
		testneed.Missing(t, "testrouter: %v; the HAProxy auth front needs Debian's HAProxy: apt-get install haproxy", err)
	}
	lua := filepath.Join(moduleRoot(t), "deploy", "auth", "admit.lua")
	bind := "bind :" + docListen + "\n"
	for _, s := range []string{bind, docLua, docAsk} {
		if !strings.Contains(doc, s) {
			t.Fatalf("testrouter: deploy/auth/haproxy.cfg no longer says %q, which the harness replaces", s)
		}
	}
	doc = strings.ReplaceAll(doc, docLua, lua)
	status, front := filepath.Join(dir, "status.cfg"), filepath.Join(dir, "haproxy.cfg")
	return func(port, statusPort int) *exec.Cmd {
		files := map[string]string{
			status: fmt.Sprintf(haproxyStatusConf, statusPort, statusPath),
			front: strings.NewReplacer(
				bind, fmt.Sprintf("bind 127.0.0.1:%d\n", port),
				docAsk, fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			).Replace(doc),
		}
		for name, text := range files {
			if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
				t.Fatalf("testrouter: %v", err)
			}
		}
		return exec.Command(haproxyBin, "-db", "-f", status, "-f", front)
	}
}
