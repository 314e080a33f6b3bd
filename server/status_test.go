package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testneed"
	"github.com/admitgo/admit/server/internal/config"
)

// chromium is Debian's headless browser; scripts/services installs it.
const chromium = "/usr/bin/chromium"

// render loads url in headless Chromium and returns the DOM it rendered,
// writing a screenshot to png when png is not "".
func render(t *testing.T, url, png string) string {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		testneed.Missing(t, "%s not found: apt-get install chromium (or scripts/services --install)", chromium)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1100,1300"}
	if png != "" {
		args = append(args, "--screenshot="+png, "--hide-scrollbars")
	} else {
		args = append(args, "--dump-dom")
	}
	var out, errs bytes.Buffer
	cmd := exec.CommandContext(ctx, chromium, append(args, url)...)
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, errs.String())
	}
	return out.String()
}

// cell returns the text of the first element of the rendered DOM whose
// class list begins with class, inside the element with id, or fails.
func cell(t *testing.T, dom, id, class string) string {
	t.Helper()
	_, after, ok := strings.Cut(dom, `id="`+id+`"`)
	if !ok {
		t.Fatalf("the page has no element %q:\n%s", id, dom)
	}
	m := regexp.MustCompile(`class="` + regexp.QuoteMeta(class) + `[^"]*">([^<]*)<`).FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("no %q after %q in the page:\n%s", class, id, dom)
	}
	return m[1]
}

// TestStatusPageInChromium renders /admit/status in headless Chromium: per
// group the budget, the requests by outcome and, once the page has two
// samples 10 s apart, their rate; in-flight against its cap; the table's
// fill; who decides; and the last reload. Nothing on it names a client.
func TestStatusPageInChromium(t *testing.T) {
	clk := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	path := writeConfig(t, `
budgets:
  api: {like: link, rate: 1, burst: 3}
routes:
  - {group: api, pattern: "GET /api/{x}"}
`)
	args := []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--upstream", newRecorder(t).url, "--config", path}
	cfg := serverConfig(t, args[4:]...)
	cfg.Now = clk.Now
	r := startConfig(t, cfg)
	r.s.reparse = func() (config.Config, error) {
		return config.Parse(args, func(string) string { return "" }, io.Discard)
	}
	status := r.metrics + "/admit/status"

	render(t, status, "") // the first sample: no rates yet
	for range 5 {
		get(t, r, "127.0.0.9", "/api/x")
	}
	clk.Advance(10 * time.Second)
	dom := render(t, status, "")
	rows := regexp.MustCompile(`<tr class="outcome-([a-z_]+)"><td>[a-z_]+</td><td class="n total">([0-9.]+)</td><td class="n rate">([0-9.-]+)</td>`).FindAllStringSubmatch(afterID(t, dom, "group-api"), 2)
	got := map[string][2]string{}
	for _, m := range rows {
		got[m[1]] = [2]string{m[2], m[3]}
	}
	if got["ok"] != [2]string{"3", "0.3"} || got["rate_limited"] != [2]string{"2", "0.2"} {
		t.Errorf("api outcomes (total, per second over 10 s): got %v, want ok 3, 0.3 and rate_limited 2, 0.2", got)
	}
	if got := cell(t, dom, "group-api", "n inflight"); got != "0 of 256 (per client 32)" {
		t.Errorf("api in flight: got %q", got)
	}
	if got := cell(t, dom, "group-api", "n clients"); got != "1 of 16384, 0 evicted" {
		t.Errorf("api table: got %q", got)
	}
	if got := cell(t, dom, "group-api", "store"); got != "memory" {
		t.Errorf("api decided by: got %q, want memory", got)
	}
	if strings.Contains(dom, "127.0.0.9") {
		t.Error("the page names a client's address")
	}
	if !strings.Contains(dom, `<span id="reload">none since start</span>`) {
		t.Errorf("the page does not say that nothing was reloaded:\n%s", dom)
	}

	png := filepath.Join(t.TempDir(), "status.png")
	if file := os.Getenv("ADMIT_STATUS_SCREENSHOT"); file != "" {
		png = file // where docs/img/status.png is made from
	}
	render(t, status, png)
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("screenshot: %v, want a PNG file", err)
	}

	if err := os.WriteFile(path, []byte("budgets:\n  api: {rate: 0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.s.reload(); err == nil {
		t.Fatal("reload of a refused configuration: got nil error")
	}
	dom = render(t, status, "")
	if !regexp.MustCompile(`<span id="reload">2026-12-01T12:00:10Z: refused, serving the configuration before: [^<]*rate`).MatchString(dom) {
		t.Errorf("after a refused reload the page does not say so:\n%s", dom)
	}

}

// afterID returns the page from the element with id on.
func afterID(t *testing.T, dom, id string) string {
	t.Helper()
	_, after, ok := strings.Cut(dom, `id="`+id+`"`)
	if !ok {
		t.Fatalf("the page has no element %q", id)
	}
	return after
}

// TestStatusPageHeaders: the page is not cached and cannot be framed.
func TestStatusPageHeaders(t *testing.T) {
	r := start(t, "--demo")
	resp, err := r.client.Get(r.metrics + "/admit/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for name, want := range map[string]string{
		"Content-Type":    "text/html; charset=utf-8",
		"Cache-Control":   "no-store",
		"X-Frame-Options": "DENY",
	} {
		if got := resp.Header.Get(name); resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("%d, %s: %q, want 200 and %q", resp.StatusCode, name, got, want)
		}
	}
}

// TestStatusPageGroupsAndFooter: a built-in group no route uses gets no
// section of its own, only a line naming it; the footer says who may read
// a client's state, which depends on whether an admin token is set.
func TestStatusPageGroupsAndFooter(t *testing.T) {
	page := func(t *testing.T, r *running) string {
		t.Helper()
		resp, err := r.client.Get(r.metrics + "/admit/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	routes := []string{"--upstream", newRecorder(t).url, "--route", "link=GET /s/{token}"}
	html := page(t, start(t, routes...))
	if strings.Contains(html, `id="group-webhook"`) || !strings.Contains(html, `id="group-link"`) {
		t.Errorf("the page has a section for webhook, which no route uses, or none for link:\n%s", html)
	}
	if !strings.Contains(html, `<p id="unused">No route uses webhook.</p>`) {
		t.Errorf("the page does not name webhook as unused:\n%s", html)
	}
	if !strings.Contains(html, "without <code>--admin-token-file</code>, only from this host") {
		t.Errorf("without a token, the footer does not say a client's state is read from this host:\n%s", html)
	}
	html = page(t, start(t, append(routes, "--admin-token-file", tokenFile(t, "s3cret-token\n"))...))
	if !strings.Contains(html, "with the admin token of <code>--admin-token-file</code>, from anywhere") {
		t.Errorf("with a token, the footer does not say the token is needed:\n%s", html)
	}
}
