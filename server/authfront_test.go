package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
	"github.com/admitgo/admit/server/internal/config"
)

// askingFront is admit auth beside a real front proxy, configured as
// deploy/auth documents it, in front of a recording app.
type askingFront struct {
	front *testrouter.Front
	rec   *recorder
	admit *running
}

// linkConfig limits GET /l/{id} to a burst of 3 per client.
const linkConfig = "routes:\n  - {group: link, pattern: \"GET /l/{id}\"}\nbudgets:\n  link: {rate: 0.001, burst: 3}\n"

// startAsking starts admit auth on linkConfig, then kind asking it and
// proxying to a recorder. extra are further flags of admit auth.
func startAsking(t *testing.T, kind testrouter.AuthKind, extra ...string) *askingFront {
	t.Helper()
	return startAskingWith(t, kind, linkConfig, extra...)
}

// startAskingWith is startAsking on the config file yaml.
func startAskingWith(t *testing.T, kind testrouter.AuthKind, yaml string, extra ...string) *askingFront {
	t.Helper()
	return startAskingDoc(t, kind, testrouter.DocumentedAuth(t, kind), yaml, extra...)
}

// startAskingDoc is startAskingWith with the front's configuration doc,
// the documented one edited.
func startAskingDoc(t *testing.T, kind testrouter.AuthKind, doc, yaml string, extra ...string) *askingFront {
	t.Helper()
	file := writeConfig(t, yaml)
	args := []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--config", file, "--trusted-proxy", testrouter.FrontSource + "/32"}
	if kind == testrouter.NginxAuth {
		args = append(args, "--deny-status", "403") // as deploy/auth/nginx.conf says
	}
	cfg, err := config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...), append(args, extra...), func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	a := startConfig(t, cfg)
	f := testrouter.StartAuthFrontWith(t, kind, strings.TrimPrefix(a.url, "http://"), strings.TrimPrefix(rec.url, "http://"), doc)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", kind, f.LogTail())
		}
	})
	return &askingFront{front: f, rec: rec, admit: a}
}

// send sends method path through the front from c, with headers ("Name:
// value"), and returns the answer, its body read.
func (a *askingFront) send(t *testing.T, c *http.Client, method, path string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, a.front.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header[name] = append(req.Header[name], value)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s through %s: %v", method, path, a.front.Kind, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestAuthThroughFronts: through nginx's auth_request, Caddy's
// forward_auth and HAProxy's Lua action as documented, a client gets the
// burst from the app, then 429 with Retry-After and Admit-Status from the
// front, and the app sees no more than the burst; forged forwarding headers
// neither move the key nor tell admit of another request; another client
// has its own bucket.
func TestAuthThroughFronts(t *testing.T) {
	for _, kind := range testrouter.AuthKinds() {
		t.Run(string(kind), func(t *testing.T) {
			a := startAsking(t, kind)
			c := clientAt(t, "127.0.0.2")
			var got []int
			for i := range 5 {
				forged := []string{
					"X-Forwarded-For: 1.2.3." + string(rune('0'+i)),
					"X-Original-URI: /free", "X-Original-Method: GET",
					"X-Forwarded-Uri: /free", "X-Forwarded-Method: GET",
				}
				resp := a.send(t, c, "GET", "/l/x", forged...)
				got = append(got, resp.StatusCode)
				if resp.StatusCode == http.StatusTooManyRequests {
					if resp.Header.Get("Retry-After") == "" || resp.Header.Get("Admit-Status") != "rate_limited" {
						t.Errorf("refusal %d: Retry-After %q, Admit-Status %q; want both, rate_limited", i+1, resp.Header.Get("Retry-After"), resp.Header.Get("Admit-Status"))
					}
				}
			}
			if want := []int{200, 200, 200, 429, 429}; !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if n := a.rec.count(); n != 3 {
				t.Errorf("the app got %d requests, want the burst, 3", n)
			}
			if resp := a.send(t, clientAt(t, "127.0.0.3"), "GET", "/l/x"); resp.StatusCode != http.StatusOK {
				t.Errorf("another client: got %d, want 200", resp.StatusCode)
			}
			if resp := a.send(t, c, "GET", "/free"); resp.StatusCode != http.StatusOK {
				t.Errorf("a path no route names: got %d, want 200", resp.StatusCode)
			}
		})
	}
}

// TestAuthSpellingsThroughFronts: each front forwards the target as the
// client sent it, so every spelling the app could route to the limited
// handler is either counted under the limit or refused; once the budget
// is spent, none reaches the app.
func TestAuthSpellingsThroughFronts(t *testing.T) {
	spellings := []string{"/l/x", "/l//x", "/l/./x", "/l/%78", "//l/x", "/l/y/../x", "/l/x?a=1", "/l/x;p=1", "/l/%2e/x", "/L/x"}
	for _, kind := range testrouter.AuthKinds() {
		t.Run(string(kind), func(t *testing.T) {
			a := startAsking(t, kind, "--route-folding")
			c := clientAt(t, "127.0.0.4")
			for range 3 {
				a.send(t, c, "GET", "/l/x")
			}
			before := a.rec.count()
			var seen []string
			for _, path := range spellings {
				resp := a.send(t, c, "GET", path)
				if resp.StatusCode == http.StatusOK {
					t.Errorf("%s: got 200 from the app with the budget spent", path)
				}
				seen = append(seen, fmt.Sprintf("%s %d %s", path, resp.StatusCode, resp.Header.Get("Admit-Status")))
			}
			t.Logf("%s, budget spent: %s", kind, strings.Join(seen, ", "))
			if n := a.rec.count() - before; n != 0 {
				t.Errorf("the app got %d requests past the spent budget, want 0: %v", n, a.rec.paths()[before:])
			}
		})
	}
}

// TestAuthFrontWithAdmitDown: with admit auth gone, every documented
// configuration fails closed: nothing reaches the app.
func TestAuthFrontWithAdmitDown(t *testing.T) {
	for _, kind := range testrouter.AuthKinds() {
		t.Run(string(kind), func(t *testing.T) {
			a := startAsking(t, kind)
			if err := a.admit.stop(); err != nil {
				t.Fatal(err)
			}
			a.admit.s.close()
			resp := a.send(t, clientAt(t, "127.0.0.5"), "GET", "/l/x")
			if resp.StatusCode < 500 {
				t.Errorf("got %d, want a 5xx from the front", resp.StatusCode)
			}
			if n := a.rec.count(); n != 0 {
				t.Errorf("the app got %d requests, want 0: the documented configuration fails closed", n)
			}
		})
	}
}

// paths returns the targets the recorder saw, in order.
func (rec *recorder) paths() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, r := range rec.seen {
		out = append(out, r.RequestURI)
	}
	return out
}

// TestAuthFrontFailsOpen: each front whose documented configuration says
// how to fail open, edited as it says, sends the request to the app when
// admit cannot answer.
func TestAuthFrontFailsOpen(t *testing.T) {
	for _, kind := range testrouter.AuthKinds() {
		doc, ok := testrouter.FailOpen(t, kind)
		if !ok {
			continue // Caddy's documented configuration fails closed only
		}
		t.Run(string(kind), func(t *testing.T) {
			args := []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--config", writeConfig(t, linkConfig), "--trusted-proxy", testrouter.FrontSource + "/32", "--deny-status", "403"}
			cfg, err := config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...), args, func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder(t)
			a := startConfig(t, cfg)
			f := testrouter.StartAuthFrontWith(t, kind, strings.TrimPrefix(a.url, "http://"), strings.TrimPrefix(rec.url, "http://"), doc)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("%s log:\n%s", kind, f.LogTail())
				}
			})
			if err := a.stop(); err != nil {
				t.Fatal(err)
			}
			a.s.close()
			open := &askingFront{front: f, rec: rec, admit: a}
			if resp := open.send(t, clientAt(t, "127.0.0.6"), "GET", "/l/x"); resp.StatusCode != http.StatusOK {
				t.Errorf("got %d, want 200 from the app: the configuration fails open", resp.StatusCode)
			}
			if n := rec.count(); n != 1 {
				t.Errorf("the app got %d requests, want 1", n)
			}
		})
	}
}
