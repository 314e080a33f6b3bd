package testrouter

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nginxBin is Debian's nginx.
const nginxBin = "/usr/sbin/nginx"

// nginxConf runs nginx as a single foreground process, so that it is the
// child the harness kills and, on Linux, dies with the test binary: a master
// process killed alone would leave its workers serving. Every file it opens
// lies under the test's directory, none under /etc/nginx or /var/log/nginx.
//
// The URIs on proxy_pass make nginx send on the path it normalised
// (percent-decoded, dot segments resolved, slashes merged) rather than the
// one the client sent. nginx's defaults stay: it drops header names with an
// underscore (ignore_invalid_headers), and passes the others on untouched,
// adding no X-Forwarded-For of its own.
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

        location /l/ {
            proxy_pass http://127.0.0.1:%[5]d/l/;
        }
        location / {
            proxy_pass http://127.0.0.1:%[5]d/;
        }
    }
}
`

// nginxCommand returns the command that runs nginx on a port in front of
// the app on appPort, with its files in dir/nginx and its error log in the
// log serve keeps for it, so that failure messages and bindFailed read it.
func nginxCommand(t testing.TB, dir string, appPort int) func(port int) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(nginxBin); err != nil {
		t.Fatalf("testrouter: %v; the NginxGo kind needs Debian's nginx: apt-get install nginx", err)
	}
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
		text := fmt.Sprintf(nginxConf, user, prefix, errorLog, port, appPort)
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("testrouter: %v", err)
		}
		// -e: the log nginx writes to before it has read error_log.
		return exec.Command(nginxBin, "-p", prefix+"/", "-c", conf, "-e", errorLog)
	}
}
