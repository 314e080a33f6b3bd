package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
)

// TestExemptRefusedAtStartup: a bad exemption stops startup with exit 2,
// naming the entry in the file's words.
func TestExemptRefusedAtStartup(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"bad CIDR", `budgets: {api: {rate: 1, burst: 2, exempt: [10.0.0.0/8, 10.0.0.0/33]}}`, `line 1: budgets.api.exempt[1]: "10.0.0.0/33": want a prefix length from 1 to 32 after the slash`},
		{"not an address", `budgets: {api: {rate: 1, burst: 2, exempt: "10.0.0.0/8, monitoring"}}`, `line 1: budgets.api.exempt: "10.0.0.0/8, monitoring": "monitoring": not an IP address or CIDR prefix`},
		{"everyone", `budgets: {api: {rate: 1, burst: 2, exempt: 0.0.0.0/0}}`, `line 1: budgets.api.exempt: "0.0.0.0/0" exempts every client`},
		{"IPv6 narrower than a client", `budgets: {api: {rate: 1, burst: 2, exempt: 2001:db8::1}}`, `line 1: budgets.api.exempt: 2001:db8::1/128 is narrower than the /64 an IPv6 client is keyed by`},
		{"keys of a peer key", `budgets: {api: {rate: 1, burst: 2, exempt_keys_from: "env:KEYS"}}`, `line 1: budgets.api: exempt_keys_from applies only to a key by header:NAME, path:NAME or a key function`},
		{"keys of a chosen header", `budgets: {api: {rate: 1, burst: 2, key: "header:X-Api-Key", exempt_keys_from: "env:KEYS"}}`, `line 1: budgets.api: exempt_keys_from needs key_authenticated: a client could send a listed value of its own`},
		{"keys from an unset variable", `budgets: {api: {rate: 1, burst: 2, key: "header:X-Api-Key", key_authenticated: true, exempt_keys_from: "env:UNSET"}}`, `line 1: budgets.api.exempt_keys_from: "env:UNSET": the environment variable UNSET is empty or unset`},
		{"keys from a missing file", `budgets: {api: {rate: 1, burst: 2, key: "header:X-Api-Key", key_authenticated: true, exempt_keys_from: /nonexistent/keys}}`, `line 1: budgets.api.exempt_keys_from: "/nonexistent/keys": no such file or directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml+"\n")
			var out bytes.Buffer
			env := map[string]string{"ADMIT_UPSTREAM": "http://app.internal:3000", "KEYS": "partner"}
			code := Main(context.Background(), []string{"--config", path}, func(k string) string { return env[k] }, &out, &out)
			want := fmt.Sprintf("admit: --config %q: %s", path, tc.want)
			if code != 2 || !strings.HasPrefix(out.String(), want) {
				t.Errorf("got exit %d and %q, want exit 2 and a message starting %q", code, out.String(), want)
			}
		})
	}
}

// TestExemptKeysNeverShown: the keys are read from a variable or a file
// and kept as hashes; validate lists where they come from, never a key.
func TestExemptKeysNeverShown(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte("partner-secret\n\n  other-secret  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, show string }{
		{"env:PARTNER_KEYS", "exempt_keys_from: env:PARTNER_KEYS"},
		{keys, "exempt_keys_from: " + keys},
	} {
		t.Run(tc.from, func(t *testing.T) {
			yaml := fmt.Sprintf("budgets: {api: {rate: 1, burst: 2, key: \"header:X-Api-Key\", key_authenticated: true, exempt: [10.0.0.0/8, 192.0.2.7], exempt_keys_from: %q}}", tc.from)
			env := map[string]string{"PARTNER_KEYS": "partner-secret, other-secret"}
			c, err := parse(t, []string{"--config", writeConfig(t, yaml+"\n")}, env)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{quota.Subject("partner-secret"), quota.Subject("other-secret")}
			if got := c.Budgets["api"].ExemptKeys; !slices.Equal(got, want) {
				t.Errorf("ExemptKeys: got %v, want the hashes %v", got, want)
			}
			out, err := runArgs(t, map[string]string{"ADMIT_UPSTREAM": "http://app.internal:3000", "PARTNER_KEYS": env["PARTNER_KEYS"]},
				"validate", "--config", writeConfig(t, yaml+"\nroutes:\n  - {group: [link, api], pattern: GET /x}\n"))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{tc.show, "exempt: [10.0.0.0/8, 192.0.2.7/32]"} {
				if !strings.Contains(out, w) {
					t.Errorf("validate lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "secret") || strings.Contains(out, want[0]) {
				t.Errorf("validate shows a key or its hash:\n%s", out)
			}
		})
	}
}

// TestExplainExempt: explain says which exemption lets a request past, and
// a forwarding header from a peer that is not a trusted proxy never makes
// one exempt.
func TestExplainExempt(t *testing.T) {
	path := writeConfig(t, "budgets: {api: {like: link, exempt: [10.0.0.0/8]}}\nroutes:\n  - {group: api, pattern: GET /x}\n")
	const line = "exempt   api: by 10.0.0.0/8"
	for _, tc := range []struct {
		name   string
		args   []string
		exempt bool
	}{
		{"from the prefix", []string{"--peer", "10.1.2.3:1"}, true},
		{"from elsewhere", []string{"--peer", "198.51.100.9:1"}, false},
		{"spoofed by an untrusted peer", []string{"--peer", "198.51.100.9:1", "-H", "X-Forwarded-For: 10.0.0.1"}, false},
		{"spoofed with Forwarded", []string{"--peer", "198.51.100.9:1", "-H", "Forwarded: for=10.0.0.1"}, false},
		{"forwarded by a trusted proxy", []string{"--peer", "192.0.2.5:1", "-H", "X-Forwarded-For: 10.0.0.1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"explain", "--config", path, "--trusted-proxy", "192.0.2.0/24"}, tc.args...)
			out, err := runArgs(t, nil, append(args, "GET", "/x")...)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out, line); got != tc.exempt {
				t.Errorf("exempt line: got %v, want %v:\n%s", got, tc.exempt, out)
			}
		})
	}
}

// TestExemptThroughTheProxy: forwarding headers from a peer that is not a
// trusted proxy never exempt it, whatever they name; the same header from
// a trusted proxy does. Exempt requests are logged as such, never sampled
// away, and the status page shows the exemption and its outcome.
func TestExemptThroughTheProxy(t *testing.T) {
	r, log := startLogged(t, testclock.New(time.Unix(1e9, 0)), `
budgets:
  api: {rate: 0.001, burst: 1, exempt: [10.0.0.0/8]}
routes:
  - {group: api, pattern: "GET /api"}
`, "--trusted-proxy", "127.0.0.9", "--access-log-refusals", "0")
	const untrusted = "127.0.0.7"
	if got := get(t, r, untrusted, "/api"); got != http.StatusOK {
		t.Fatalf("first request: got %d, want 200", got)
	}
	for _, spoof := range []string{"X-Forwarded-For: 10.0.0.1", "Forwarded: for=10.0.0.1", "X-Real-Ip: 10.0.0.1", "X-Forwarded-For: 10.0.0.1, 127.0.0.9"} {
		if got := get(t, r, untrusted, "/api", spoof); got != http.StatusTooManyRequests {
			t.Errorf("untrusted peer with %q: got %d, want 429", spoof, got)
		}
	}
	for range 3 {
		if got := get(t, r, "127.0.0.9", "/api", "X-Forwarded-For: 10.0.0.1"); got != http.StatusOK {
			t.Errorf("trusted proxy for 10.0.0.1: got %d, want 200 (exempt)", got)
		}
	}
	var outcomes []string
	for _, l := range accessLines(t, log) {
		outcomes = append(outcomes, fmt.Sprint(l["outcome"]))
	}
	// --access-log-refusals 0 writes no refusal, and every exempt request.
	if got, want := strings.Join(outcomes, ","), "ok,exempted,exempted,exempted"; got != want {
		t.Errorf("access log outcomes: got %s, want %s", got, want)
	}
	resp, err := r.client.Get(r.metrics + "/admit/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"key peer, exempt 10.0.0.0/8", `<tr class="outcome-exempted"><td>exempted</td><td class="n total">3</td>`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}

// TestExplainExemptKey: explain says a listed key is exempt, and names
// where the keys come from, never the key.
func TestExplainExemptKey(t *testing.T) {
	path := writeConfig(t, "budgets: {api: {like: link, key: \"header:X-Api-Key\", key_authenticated: true, exempt_keys_from: \"env:PARTNER_KEYS\"}}\nroutes:\n  - {group: [link, api], pattern: GET /x}\n")
	env := map[string]string{"PARTNER_KEYS": "partner-secret"}
	for key, exempt := range map[string]bool{"partner-secret": true, "other": false} {
		out, err := runArgs(t, env, "explain", "--config", path, "--peer", "192.0.2.1:1", "-H", "X-Api-Key: "+key, "GET", "/x")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out, "exempt   api: by key (listed in exempt_keys_from)"); got != exempt {
			t.Errorf("X-Api-Key %s: exempt line %v, want %v:\n%s", key, got, exempt, out)
		}
		if strings.Contains(out, "exempt   link") {
			t.Errorf("X-Api-Key %s: the link group is exempt:\n%s", key, out)
		}
	}
}
