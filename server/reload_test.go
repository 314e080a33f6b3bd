package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/admitgo/admit/server/internal/config"
)

// reloadable starts a server on args and the config file yaml, whose
// clock stands still, that reloads from the same command line and from
// env, and returns it with the file's path.
func reloadable(t *testing.T, yaml string, env map[string]string, args ...string) (*running, string, *syncBuffer) {
	t.Helper()
	path := writeConfig(t, yaml)
	args = append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--config", path}, args...)
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Parse(args, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Now = frozen()
	var logs syncBuffer
	r := startWith(t, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	r.s.reparse = func() (config.Config, error) { return config.Parse(args, getenv, io.Discard) }
	return r, path, &logs
}

// rewrite replaces the config file at path.
func rewrite(t *testing.T, path, yaml string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// reloadCount returns admit_config_reloads_total for result.
func (r *running) reloadCount(t *testing.T, result string) int {
	t.Helper()
	n := 0
	for _, line := range r.scrape(t, "admit_config_reloads_total{") {
		if strings.Contains(line, `result="`+result+`"`) {
			n += r.scrapeCount(t, line[:strings.LastIndexByte(line, ' ')])
		}
	}
	return n
}

const linkOfFive = `
budgets:
  link: {burst: 5}
routes:
  - {group: link, pattern: "GET /l/{id}"}
  - {group: webhook, pattern: "POST /hooks/{name}"}
`

func TestReloadKeepsUnchangedGroups(t *testing.T) {
	r, _, _ := reloadable(t, linkOfFive, nil, "--upstream", upstreamApp(t).URL)
	r.answers(t, 3, http.StatusOK, "GET", "/l/a", "")
	if err := r.s.reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	r.answers(t, 2, http.StatusOK, "GET", "/l/a", "") // the rest of the burst, and no more
	r.rejected(t, "GET", "/l/a", "")
	if got := r.count(t, "link", "ok"); got != 5 {
		t.Errorf("link ok across the reload: got %d, want 5", got)
	}
	if got := r.reloadCount(t, "success"); got != 1 {
		t.Errorf("successful reloads: got %d, want 1", got)
	}
}

func TestReloadChangedGroupStartsAfresh(t *testing.T) {
	r, path, logs := reloadable(t, linkOfFive, nil, "--upstream", upstreamApp(t).URL)
	r.answers(t, 5, http.StatusOK, "GET", "/l/a", "")
	r.rejected(t, "GET", "/l/a", "")
	webhookBurst := 500
	r.answers(t, webhookBurst-1, http.StatusUnauthorized, "POST", "/hooks/x", "{}") // failures spend

	rewrite(t, path, `
budgets:
  link: {burst: 8}
routes:
  - {group: link, pattern: "GET /s/{id}"}
  - {group: webhook, pattern: "POST /hooks/{name}"}
`)
	if err := r.s.reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	r.answers(t, 8, http.StatusOK, "GET", "/s/a", "") // a new route, on a group afresh
	r.rejected(t, "GET", "/s/a", "")
	r.answers(t, 10, http.StatusOK, "GET", "/l/a", "") // a route removed: unlimited
	r.answers(t, 1, http.StatusUnauthorized, "POST", "/hooks/x", "{}")
	r.rejected(t, "POST", "/hooks/x", "{}") // the webhook group kept its state
	for _, want := range []string{`msg="admit: reloaded"`, `kept=health,webhook afresh=link`,
		`msg="admit: route" pattern="GET /s/{id}" groups=link limits="link (token-bucket rate 1/s, burst 8, key peer)"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}
}

func TestReloadRefusesABadConfig(t *testing.T) {
	r, path, logs := reloadable(t, linkOfFive, nil, "--upstream", upstreamApp(t).URL)
	r.answers(t, 3, http.StatusOK, "GET", "/l/a", "")
	bad := `
budgets:
  link: {burst: 50}
routes:
  - {group: link, patern: "GET /l/{id}"}
`
	rewrite(t, path, bad)
	_, startup := config.Parse([]string{"--upstream", "http://app", "--config", path}, func(string) string { return "" }, io.Discard)
	err := r.s.reload()
	if err == nil || startup == nil || err.Error() != startup.Error() {
		t.Fatalf("reload: got %v, want startup's error %v", err, startup)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="admit: reload refused; serving the configuration loaded before" err=`) ||
		!strings.Contains(logs.String(), `unknown field \"patern\"`) {
		t.Errorf("the log lacks the refusal with startup's message:\n%s", logs.String())
	}
	r.answers(t, 2, http.StatusOK, "GET", "/l/a", "") // the old budget, and its state
	r.rejected(t, "GET", "/l/a", "")
	if got := r.reloadCount(t, "failure"); got != 1 {
		t.Errorf("failed reloads: got %d, want 1", got)
	}
	if got := r.reloadCount(t, "success"); got != 0 {
		t.Errorf("successful reloads: got %d, want 0", got)
	}
}

func TestReloadRefusesARestartOnlySetting(t *testing.T) {
	env := map[string]string{"ADMIT_MAX_CONNS": "100"}
	r, _, _ := reloadable(t, linkOfFive, env, "--upstream", upstreamApp(t).URL)
	env["ADMIT_MAX_CONNS"] = "200"
	err := r.s.reload()
	want := "admit: reload: --max-conns (ADMIT_MAX_CONNS) differs from what admit started with, and only a restart applies it"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("reload: got %v, want %q", err, want)
	}
	if got := r.reloadCount(t, "failure"); got != 1 {
		t.Errorf("failed reloads: got %d, want 1", got)
	}
}

func TestReloadLetsADroppedGroupFinish(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := upstreamApp(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/x/slow" {
			close(arrived)
			<-release
		}
		w.Write([]byte("done"))
	})
	r, path, _ := reloadable(t, `
budgets:
  extra: {like: link, rate: 1, burst: 1}
routes:
  - {group: extra, pattern: "GET /x/{id}"}
`, nil, "--upstream", up.URL)
	answered := make(chan int, 1)
	go func() {
		resp, err := r.client.Get(r.url + "/x/slow")
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	waitFor(t, "the request to reach the upstream", arrived)
	rewrite(t, path, linkOfFive)
	if err := r.s.reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	r.answers(t, 3, http.StatusOK, "GET", "/x/a", "") // no longer limited
	close(release)
	if got := <-answered; got != http.StatusOK {
		t.Errorf("the dropped group's request in flight: got %d, want 200", got)
	}
}

// TestSIGHUPReloads runs the program as main does and sends it SIGHUP.
func TestSIGHUPReloads(t *testing.T) {
	path := writeConfig(t, linkOfFive)
	lines := make(chan map[string]any, 1024)
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				lines <- line
			}
		}
		close(lines)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-format", "json",
			"--upstream", upstreamApp(t).URL, "--config", path}, func(string) string { return "" }, io.Discard, pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	next := func(msg string) map[string]any {
		t.Helper()
		for line := range lines {
			if line["msg"] == msg {
				return line
			}
		}
		t.Fatalf("the log ended before %q", msg)
		return nil
	}
	serving := next("admit: serving")
	r := &running{url: "http://" + serving["addr"].(string), client: &http.Client{Timeout: testTimeout}}

	rewrite(t, path, strings.Replace(linkOfFive, "burst: 5", "burst: 2", 1))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if got := next("admit: reloaded"); got["afresh"] != "link" {
		t.Errorf("reloaded: got %v, want the link group afresh", got)
	}
	r.answers(t, 2, http.StatusOK, "GET", "/l/a", "")
	r.rejected(t, "GET", "/l/a", "")
}
