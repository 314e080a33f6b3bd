package server

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// admin sends a request to the metrics listener's admin API with an
// optional bearer token, and decodes its JSON answer into out.
func (r *running) admin(t *testing.T, method, path, token string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, r.metrics+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, want application/json: %s", method, path, resp.Header.Get("Content-Type"), body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, body)
		}
	}
	return resp.StatusCode
}

// tokenFile writes token into a file and returns its path.
func tokenFile(t *testing.T, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const adminPolicies = `
budgets:
  token: {like: link, rate: 1, burst: 3, key: "header:X-Token", key_authenticated: true}
  wide: {like: link, ipv4_prefix: 24}
routes:
  - {group: link, pattern: "GET /l/{id}"}
  - {group: token, pattern: "GET /api/{x}"}
  - {group: [wide, link], pattern: "GET /w/{x}", cost: 2}
`

func startAdmin(t *testing.T, extra ...string) *running {
	t.Helper()
	cfg := serverConfig(t, append([]string{"--upstream", upstreamApp(t).URL, "--config", writeConfig(t, adminPolicies)}, extra...)...)
	cfg.Now = frozen()
	// Not t's output: a store's client may log after the test has ended.
	return startWith(t, cfg, slog.New(slog.DiscardHandler))
}

func TestAdminGroups(t *testing.T) {
	r := startAdmin(t)
	r.answers(t, 5, http.StatusOK, "GET", "/l/a", "")
	// The budget is read as a client reads it: a map of the file's keys.
	type group struct {
		groupJSON
		Budget map[string]any `json:"budget"`
	}
	var got struct {
		Store  storeurl.Kind `json:"store"`
		Groups []group       `json:"groups"`
	}
	if code := r.admin(t, "GET", "/admit/groups", "", &got); code != http.StatusOK {
		t.Fatalf("GET /admit/groups: got %d, want 200", code)
	}
	groups := map[string]group{}
	for _, g := range got.Groups {
		groups[g.Group] = g
	}
	link, token, wide := groups["link"], groups["token"], groups["wide"]
	if got.Store != storeurl.Memory || len(got.Groups) != 5 {
		t.Errorf("store %q, %d groups; want memory and 5", got.Store, len(got.Groups))
	}
	lb := link.Budget
	if lb["rate"] != 1.0 || lb["burst"] != 20.0 || lb["key"] != "peer" || lb["hold_timeout"] != "10s" || lb["read_timeout"] != "0" ||
		lb["max_body_bytes"] != 65536.0 || lb["charge_on_failure"] != false || lb["algorithm"] != "token-bucket" || link.Clients != 1 || link.Inflight != 0 {
		t.Errorf("link: got %+v", link)
	}
	if _, ok := lb["like"]; ok {
		t.Errorf("link: like %v, want none for a built-in group", lb["like"])
	}
	if len(link.Routes) != 2 || link.Routes[0].Pattern != "GET /l/{id}" || link.Routes[1].Pattern != "GET /w/{x}" || link.Routes[1].Cost != 2 {
		t.Errorf("link routes: got %+v, want GET /l/{id} and the stacked GET /w/{x}", link.Routes)
	}
	if tb := token.Budget; tb["key"] != "header:X-Token" || tb["on_missing"] != "peer" || tb["key_authenticated"] != true || tb["like"] != "link" {
		t.Errorf("token: got %+v", token.Budget)
	}
	if wide.Budget["ipv4_prefix"] != 24.0 || len(wide.Routes) != 1 {
		t.Errorf("wide: got %+v", wide)
	}
	if health := groups["health"]; len(health.Routes) != 1 || health.Routes[0].Pattern != config.GRPCHealthPattern {
		t.Errorf("health routes: got %+v, want the gRPC health service", health.Routes)
	}
}

func TestAdminClient(t *testing.T) {
	r := startAdmin(t)
	r.answers(t, 5, http.StatusOK, "GET", "/l/a", "")
	r.answers(t, 1, http.StatusOK, "GET", "/api/x", "", "X-Token: secret")
	r.answers(t, 1, http.StatusOK, "GET", "/w/x", "")
	tests := []struct {
		path   string
		code   int
		want   clientJSON
		errors string // in the error's text, for a refusal
	}{
		{"/admit/groups/link/clients/127.0.0.1", 200, clientJSON{Group: "link", Key: "127.0.0.1/32", Bucket: "entry", Tokens: ptr(13.0), Burst: 20}, ""},
		{"/admit/groups/link/clients/127.0.0.1/32", 200, clientJSON{Group: "link", Key: "127.0.0.1/32", Bucket: "entry", Tokens: ptr(13.0), Burst: 20}, ""},
		{"/admit/groups/link/clients/192.0.2.1", 200, clientJSON{Group: "link", Key: "192.0.2.1/32", Bucket: "new", Tokens: ptr(20.0), Burst: 20,
			Note: "no entry: its next request gets one with a full bucket"}, ""},
		{"/admit/groups/wide/clients/127.0.0.200", 200, clientJSON{Group: "wide", Key: "127.0.0.0/24", Bucket: "entry", Tokens: ptr(18.0), Burst: 20}, ""},
		{"/admit/groups/token/clients/secret", 200, clientJSON{Group: "token", Key: "2bb80d537b1da3e38bd30361aa855686", Bucket: "entry", Tokens: ptr(2.0), Burst: 3}, ""},
		{"/admit/groups/link/clients/127.0.0.0/8", 400, clientJSON{}, `group "link" keys clients by /32: prefix "127.0.0.0/8" is wider`},
		{"/admit/groups/link/clients/localhost", 400, clientJSON{}, `key "localhost" is not an address or prefix`},
		{"/admit/groups/nope/clients/127.0.0.1", 404, clientJSON{}, `no group "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			var got clientJSON
			var refusal struct{ Error string }
			out := any(&got)
			if tt.code != 200 {
				out = &refusal
			}
			if code := r.admin(t, "GET", tt.path, "", out); code != tt.code {
				t.Fatalf("got %d, want %d", code, tt.code)
			}
			if tt.code != 200 {
				if !strings.Contains(refusal.Error, tt.errors) {
					t.Errorf("error: got %q, want it to hold %q", refusal.Error, tt.errors)
				}
				return
			}
			if gj, wj := describeClient(got), describeClient(tt.want); gj != wj {
				t.Errorf("got %s, want %s", gj, wj)
			}
		})
	}
}

func describeClient(c clientJSON) string {
	b, _ := json.Marshal(c)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

func TestAdminReset(t *testing.T) {
	const token = "s3cret-token"
	r := startAdmin(t, "--admin-token-file", tokenFile(t, token+"\n"))
	r.answers(t, 20, http.StatusOK, "GET", "/l/a", "")
	r.rejected(t, "GET", "/l/a", "")
	const path = "/admit/groups/link/clients/127.0.0.1"
	for _, tt := range []struct {
		name, auth string
		code       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a wrong token", "Bearer wrong", http.StatusUnauthorized},
		{"another scheme", "Basic " + token, http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("DELETE", r.metrics+path, nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: got %d (WWW-Authenticate %q), want %d with a challenge", tt.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tt.code)
		}
	}
	r.rejected(t, "GET", "/l/a", "") // nothing was reset

	// The proxy's listener has no admin API: the request goes to the app.
	req, _ := http.NewRequest("DELETE", r.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != path {
		t.Errorf("DELETE on the proxy's listener: got %d %q, want the app's answer %q", resp.StatusCode, body, path)
	}
	if _, b := r.do(t, "GET", "/admit/groups", ""); strings.Contains(b, `"groups"`) {
		t.Errorf("GET /admit/groups on the proxy's listener answered the admin API: %s", b)
	}
	r.rejected(t, "GET", "/l/a", "")

	var got clientJSON
	if code := r.admin(t, "DELETE", path, token, &got); code != http.StatusOK {
		t.Fatalf("DELETE with the token: got %d, want 200", code)
	}
	if got.Reset == nil || !*got.Reset || got.Tokens == nil || *got.Tokens != 20 {
		t.Errorf("DELETE: got %s, want reset with 20 tokens", describeClient(got))
	}
	r.answers(t, 20, http.StatusOK, "GET", "/l/a", "") // exactly a burst more
	r.rejected(t, "GET", "/l/a", "")

	if code := r.admin(t, "DELETE", "/admit/groups/link/clients/192.0.2.1", token, &got); code != http.StatusOK || got.Reset == nil || *got.Reset {
		t.Errorf("DELETE of a client without an entry: got %d %s, want 200 and reset false", code, describeClient(got))
	}
}

func TestAdminWritesOff(t *testing.T) {
	r := startAdmin(t)
	var refusal struct{ Error string }
	if code := r.admin(t, "DELETE", "/admit/groups/link/clients/127.0.0.1", "anything", &refusal); code != http.StatusForbidden ||
		!strings.Contains(refusal.Error, "writes are off") {
		t.Errorf("DELETE without --admin-token-file: got %d %q, want 403 saying writes are off", code, refusal.Error)
	}
}

func TestAdminStoreGroup(t *testing.T) {
	const token = "t"
	r := startAdmin(t, "--store", testredis.URL(), "--store-prefix", testredis.Prefix(t), "--admin-token-file", tokenFile(t, token))
	r.answers(t, 2, http.StatusOK, "GET", "/l/a", "")
	var got clientJSON
	if code := r.admin(t, "GET", "/admit/groups/link/clients/127.0.0.1", token, &got); code != http.StatusOK || got.Bucket != "store" || got.Tokens != nil {
		t.Errorf("GET on a store group: got %d %s, want bucket store and no tokens", code, describeClient(got))
	}
	var refusal struct{ Error string }
	if code := r.admin(t, "DELETE", "/admit/groups/link/clients/127.0.0.1", token, &refusal); code != http.StatusConflict ||
		!strings.Contains(refusal.Error, "shared store") {
		t.Errorf("DELETE on a store group: got %d %q, want 409 naming the store", code, refusal.Error)
	}
}

func TestAdminTokenFileRefused(t *testing.T) {
	empty := tokenFile(t, " \n")
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--demo", "--admin-token-file", "/nonexistent/token"}, nil, `admit: --admin-token-file "/nonexistent/token": no such file or directory`},
		{[]string{"--demo", "--admin-token-file", empty}, nil, `admit: --admin-token-file "` + empty + `": the file is empty`},
		{[]string{"--demo"}, map[string]string{"ADMIT_ADMIN_TOKEN_FILE": empty}, `admit: ADMIT_ADMIN_TOKEN_FILE "` + empty + `": the file is empty`},
	} {
		_, err := runArgs(t, tt.env, tt.args...)
		var uerr usageError
		if !errors.As(err, &uerr) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want a usage error starting %q", tt.args, err, tt.want)
		}
	}
}
