package testrouter

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/admitgo/admit/internal/testneed"
)

// nginxBin is Debian's nginx.
const nginxBin = "/usr/sbin/nginx"

// nginxFront is what a kind with nginx in front runs behind nginx, and how
// nginx passes requests on to it.
type nginxFront struct {
	app       Kind   // the kind of the app behind nginx: NginxGo for its own Go app
	locations string // nginx's locations, with %[1]d for the app's port
}

// nginxFronts holds the kinds that are nginx in front of an app.
var nginxFronts = map[Kind]nginxFront{
	NginxGo: {app: NginxGo, locations: `
        location /l/ {
            proxy_pass http://127.0.0.1:%[1]d/l/;
        }
        location / {
            proxy_pass http://127.0.0.1:%[1]d/;
        }`},
	NginxDecodeTomcat: {app: Tomcat, locations: `
        location / {
            proxy_pass http://127.0.0.1:%[1]d/;
        }`},
	// With variables in proxy_pass, nginx sends the URI they spell as it
	// is: $uri is the normalised path, decoded and not encoded again.
	NginxDecodeFlask: {app: Flask, locations: `
        location / {
            proxy_pass http://127.0.0.1:%[1]d$uri$is_args$args;
        }`},
}

// nginxConf runs nginx as a single foreground process, so that it is the
// child the harness kills and, on Linux, dies with the test binary: a master
// process killed alone would leave its workers serving. Every file it opens
// lies under the test's directory, none under /etc/nginx or /var/log/nginx.
//
// The URIs on proxy_pass (nginxFronts) make nginx send on the path it
// normalised (percent-decoded, dot segments resolved, slashes merged)
// rather than the one the client sent. nginx's defaults stay: it drops
// header names with an underscore (ignore_invalid_headers), and passes the
// others on untouched, adding no X-Forwarded-For of its own.
const nginxConf = `# Written by testrouter for one test.
daemon off;
master_process off;
%[1]s
pid "%[2]s/nginx.pid";
error_log "%[3]s" info;

events {
    worker_connections 256;
}

http {
    access_log "%[2]s/access.log";
    client_body_temp_path "%[2]s/client_body";
    proxy_temp_path "%[2]s/proxy";
    fastcgi_temp_path "%[2]s/fastcgi";
    uwsgi_temp_path "%[2]s/uwsgi";
    scgi_temp_path "%[2]s/scgi";

    server {
        listen 127.0.0.1:%[4]d;
%[5]s
    }
}
`

// nginxCommand returns the command that runs nginx for kind on a port in
// front of the app on appPort, with its files in dir/nginx and its error
// log in the log serve keeps for it, so that failure messages and
// bindFailed read it.
func nginxCommand(t testing.TB, kind Kind, dir string, appPort int) func(port int) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(nginxBin); err != nil {
		testneed.Missing(t, "testrouter: %v; the %s kind needs Debian's nginx: apt-get install nginx", err, kind)
	}
	locations := fmt.Sprintf(nginxFronts[kind].locations, appPort)
	prefix := filepath.Join(dir, "nginx")
	if err := os.Mkdir(prefix, 0o755); err != nil {
		t.Fatalf("testrouter: %v", err)
	}
	errorLog := filepath.Join(dir, "nginx.log")
	conf := filepath.Join(prefix, "nginx.conf")
	// In single-process mode nginx never changes user; the directive says
	// that running as root is meant, and nginx warns about it under any
	// other user.
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	return func(port int) *exec.Cmd {
		text := fmt.Sprintf(nginxConf, user, prefix, errorLog, port, locations)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		// -e: the log nginx writes to before it has read error_log.
		return exec.Command(nginxBin, "-p", prefix+"/", "-c", conf, "-e", errorLog)
	}
}
