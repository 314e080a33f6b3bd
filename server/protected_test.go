package server

import (
	"log/slog"
	"strings"
	"testing"
)

// TestStartupSaysWhatIsProtected checks that startup logs every route with
// its limits, and warns when there is none.
func TestStartupSaysWhatIsProtected(t *testing.T) {
	up := upstreamApp(t).URL
	var logs syncBuffer
	startWith(t, serverConfig(t, "--upstream", up, "--route", "link=GET /l/{id}",
		"--config", writeConfig(t, "budgets:\n  tenant: {like: link, rate: 10, burst: 30, key: 'path:t', key_authenticated: true}\nroutes:\n  - {group: [link, tenant], pattern: 'GET /t/{t}', cost: 2}\n")),
		slog.New(slog.NewTextHandler(&logs, nil)))
	for _, want := range []string{
		`msg="admit: route" pattern="GET /t/{t}" groups=link,tenant limits="link (token-bucket rate 1/s, burst 20, key peer), then tenant (token-bucket rate 10/s, burst 30, key path:t), cost 2"`,
		`msg="admit: route" pattern="GET /l/{id}" groups=link limits="link (token-bucket rate 1/s, burst 20, key peer)"`,
		`msg="admit: route" pattern="POST /grpc.health.v1.Health/" groups=health limits="health (token-bucket rate 5/s, burst 20, key peer)"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "no route is configured") {
		t.Errorf("a warning about no routes with routes:\n%s", logs.String())
	}

	var bare syncBuffer
	startWith(t, serverConfig(t, "--upstream", up), slog.New(slog.NewTextHandler(&bare, nil)))
	if want := `level=WARN msg="admit: no route is configured, so every request passes through unlimited`; !strings.Contains(bare.String(), want) {
		t.Errorf("the log lacks %s:\n%s", want, bare.String())
	}
}
