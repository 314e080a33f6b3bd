package server

import (
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/grpchealth"

	"github.com/admitgo/admit/server/internal/ops"
	"github.com/admitgo/admit/server/internal/opshost"
)

// opsRoutes are the routes of the proxy's metrics listener, and a path and
// a method it does not serve: a Host it does not answer to is refused on
// every one before any handler runs.
var opsRoutes = []struct{ method, path string }{
	{"GET", "/metrics"},
	{"GET", "/healthz"},
	{"GET", "/admit/status"},
	{"GET", "/admit/groups"},
	{"GET", "/admit/groups/link/clients/127.0.0.1"},
	{"DELETE", "/admit/groups/link/clients/127.0.0.1"},
	{"GET", "/nowhere"},
	{"POST", "/metrics"},
}

// TestOpsListenerHost: a page that rebinds its own name to the metrics
// listener's address gets 421 on every route, the client reads above all,
// which answer a loopback peer without the admin token; each refusal is
// counted. Addresses, localhost, names under .localhost and the names of
// --admin-host are answered as before.
func TestOpsListenerHost(t *testing.T) {
	r := startAdmin(t, "--admin-host", "admit.internal", "--admin-host", "Ops.Example.,metrics.example")
	rebound := []string{"rebind.attacker.example", "rebind.attacker.example:9464", "localhost.attacker.example",
		"127.0.0.1.nip.io", "admit.internal.attacker.example", "xlocalhost"}
	for _, host := range rebound {
		for _, rt := range opsRoutes {
			code, body := hostAnswer(t, r.client, r.metrics, host, rt.method, rt.path)
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, "--admin-host") {
				t.Errorf("%s %s Host %q: got %d %q, want 421 naming --admin-host", rt.method, rt.path, host, code, body)
			}
		}
	}
	port := r.metrics[strings.LastIndexByte(r.metrics, ':'):]
	for _, host := range []string{"127.0.0.1" + port, "127.0.0.1", "[::1]" + port, "[::1]", "10.1.2.3:9464",
		"localhost", "LOCALHOST." + port, "foo.localhost" + port, "admit.internal", "ADMIT.internal.:80",
		"ops.example", "metrics.example" + port} {
		if code, body := hostAnswer(t, r.client, r.metrics, host, "GET", "/admit/groups/link/clients/127.0.0.1"); code != http.StatusOK {
			t.Errorf("GET a client, Host %q: got %d %q, want 200", host, code, body)
		}
		if code, _ := hostAnswer(t, r.client, r.metrics, host, "GET", "/healthz"); code != http.StatusOK {
			t.Errorf("GET /healthz, Host %q: got %d, want 200", host, code)
		}
	}
	if got, want := r.scrapeCount(t, `admit_server_misdirected_total{admit_server_listener="metrics"`), len(rebound)*len(opsRoutes); got != want {
		t.Errorf("admit_server_misdirected_total: got %d, want %d", got, want)
	}
}

// TestOpsServersAreGuarded: the Host check stands in front of the whole
// mux of the proxy's metrics listener, so that a route added later is
// guarded too.
func TestOpsServersAreGuarded(t *testing.T) {
	tel, err := ops.NewTelemetry()
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	s := &server{tel: tel, health: grpchealth.NewStaticChecker()}
	if h, ok := s.metricsServer(nil).Handler.(*opshost.Handler); !ok {
		t.Errorf("the metrics listener's handler %T, want *opshost.Handler", h)
	}
}
