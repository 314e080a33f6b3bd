package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/internal/config"
)

// parseFile parses a config file of yaml with extra flags, and returns the
// error without the part that names the file.
func parseFile(t *testing.T, yaml string, extra ...string) (config.Config, string) {
	t.Helper()
	path := writeConfig(t, yaml+"\n")
	c, err := parse(t, append([]string{"--config", path}, extra...), nil)
	if err == nil {
		return c, ""
	}
	return c, strings.TrimPrefix(err.Error(), fmt.Sprintf("admit: --config %q: ", path))
}

// TestKeyRefusesHeadersTheServerRemoves: the HTTP server takes Host out of
// a request's headers, and Transfer-Encoding, Content-Length and Trailer
// when it frames the body, so a group keyed by one would never find it (or
// find it only when the client chooses to send it).
func TestKeyRefusesHeadersTheServerRemoves(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"header:Host", `line 1: budgets.api.key: Host is not a header admit can key by: `},
		{"header:host", `line 1: budgets.api.key: Host is not a header admit can key by: `},
		{"header:Transfer-Encoding", `line 1: budgets.api.key: Transfer-Encoding is not a header admit can key by: `},
		{"header:content-length", `line 1: budgets.api.key: Content-Length is not a header admit can key by: `},
		{"header:Trailer", `line 1: budgets.api.key: Trailer is not a header admit can key by: `},
	} {
		t.Run(tc.key, func(t *testing.T) {
			_, got := parseFile(t, fmt.Sprintf(`budgets: {api: {rate: 1, burst: 2, key: %q, key_authenticated: true}}`, tc.key))
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want it to start %q", got, tc.want)
			}
		})
	}
	if _, got := parseFile(t, `budgets: {api: {rate: 1, burst: 2, key: "header:Host"}}`); !strings.Contains(got, "route pattern") {
		t.Errorf("header:Host: got %q, want it to suggest a host in the route pattern", got)
	}
	if _, got := parseFile(t, `budgets: {api: {rate: 1, burst: 2, key: "header:X-Host"}}`); got != "" {
		t.Errorf("header:X-Host: got %q, want it accepted", got)
	}
}

// TestKeyByHostNameIsRefusedAtStartup runs the refusal through the command:
// a usage error, so the process exits 2.
func TestKeyByHostNameIsRefusedAtStartup(t *testing.T) {
	path := writeConfig(t, "budgets:\n  per-host: {rate: 1, burst: 2, key: \"header:Host\", key_authenticated: true}\n")
	_, err := runArgs(t, nil, "validate", "--upstream", "http://app", "--config", path, "--allow-no-routes")
	var uerr usageError
	if !errors.As(err, &uerr) || !strings.Contains(err.Error(), `line 2: budgets.per-host.key: Host is not a header admit can key by`) {
		t.Errorf("got %v, want a usage error naming budgets.per-host.key", err)
	}
}

// TestIPv6PrefixAtMost64: an IPv6 client is keyed by its /64 already, so a
// longer prefix would widen nothing.
func TestIPv6PrefixAtMost64(t *testing.T) {
	for _, tc := range []struct{ field, want string }{
		{"ipv6_prefix: 65", `line 1: budgets.api.ipv6_prefix: want a prefix length from 1 to 64`},
		{"ipv6_prefix: 128", `line 1: budgets.api.ipv6_prefix: want a prefix length from 1 to 64`},
		{"ipv6_prefix: 64", ``},
		{"ipv6_prefix: 48", ``},
		{"ipv4_prefix: 33", `line 1: budgets.api.ipv4_prefix: want a prefix length from 1 to 32`},
		{"ipv4_prefix: 32", ``},
	} {
		t.Run(tc.field, func(t *testing.T) {
			_, got := parseFile(t, fmt.Sprintf(`budgets: {api: {rate: 1, burst: 2, %s}}`, tc.field))
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAdminKeyWidthFollowsTheDoor: the door never keys an IPv6 client by
// more than its /64, whatever the group's ipv6_prefix, so the admin API
// takes a /64 for such a group.
func TestAdminKeyWidthFollowsTheDoor(t *testing.T) {
	for _, tc := range []struct {
		k       admit.Key
		key     string
		refused bool
	}{
		{admit.Key{}, "2001:db8::/64", false},
		{admit.Key{}, "2001:db8::/56", true},
		{admit.Key{IPv6Prefix: 96}, "2001:db8::/64", false},
		{admit.Key{IPv6Prefix: 128}, "2001:db8::/64", false},
		{admit.Key{IPv6Prefix: 48}, "2001:db8::/48", false},
		{admit.Key{IPv6Prefix: 48}, "2001:db8::/40", true},
		{admit.Key{IPv4Prefix: 24}, "192.0.2.0/24", false},
		{admit.Key{IPv4Prefix: 24}, "192.0.0.0/16", true},
	} {
		err := checkPrefix("g", tc.k, tc.key)
		if (err != nil) != tc.refused {
			t.Errorf("key %+v, %s: got %v, want refused %v", tc.k, tc.key, err, tc.refused)
		}
	}
}

// TestCostAboveSharedBurst: once the client table is full, newcomers spend
// from the group's shared bucket, which a route costing more than it holds
// could never be admitted from; nor from a replica's share of it while the
// store is down.
func TestCostAboveSharedBurst(t *testing.T) {
	local := []string{"--store", "redis://127.0.0.1:1", "--store-fail", "local", "--replicas", "4"}
	for _, tc := range []struct {
		name, yaml string
		flags      []string
		want       string
	}{
		{"token bucket", "budgets: {api: {like: link, shared_burst: 5}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 6}", nil,
			`line 3: routes[0]: cost 6 is more than group "api" admits from its shared bucket, which serves clients once its table is full (its shared_burst is 5)`},
		{"token bucket at the shared burst", "budgets: {api: {like: link, shared_burst: 5}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 5}", nil, ``},
		{"fixed window", "budgets: {api: {algorithm: fixed-window, limit: 10, window: 1m, shared_burst: 4}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 5}", nil,
			`line 3: routes[0]: cost 5 is more than group "api" admits from its shared bucket, which serves clients once its table is full (its shared_burst is 4)`},
		{"second of stacked groups", "budgets: {api: {like: link, shared_burst: 2}}\nroutes:\n  - {group: [link, api], pattern: GET /x, cost: 3}", nil,
			`line 3: routes[0]: cost 3 is more than group "api" admits from its shared bucket`},
		{"on a shared store, which keeps no shared bucket", "budgets: {api: {like: link, shared_burst: 5}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 6}",
			[]string{"--store", "redis://127.0.0.1:1"}, ``},
		{"a replica's share", "budgets: {api: {like: link, burst: 40, shared_burst: 8}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 3}", local,
			`line 3: routes[0]: cost 3 is more than group "api" admits from its shared bucket on one replica while the store is down (shared_burst 8 divided by --replicas 4 is 2)`},
		{"a replica's share, fitting", "budgets: {api: {like: link, burst: 40, shared_burst: 8}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 2}", local, ``},
		{"an unlimited rate, which never asks the store or its fallback", "budgets: {api: {like: link, rate: .inf, burst: 40, shared_burst: 8}}\nroutes:\n  - {group: api, pattern: GET /x, cost: 3}", local, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := parseFile(t, tc.yaml, tc.flags...)
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// On the command line, the route is named as it was given.
	_, err := parse(t, []string{"--config", writeConfig(t, "budgets: {api: {like: link, shared_burst: 1}}\n"), "--route", "api=GET /x"}, nil)
	if err != nil {
		t.Errorf("cost 1 on shared_burst 1: got %v, want it accepted", err)
	}
}

// TestClientChosenKeyNamesALayerInFront: the app checks a key only after
// admit has admitted the request, so only a layer in front of admit makes
// key_authenticated true; the refusal says so.
func TestClientChosenKeyNamesALayerInFront(t *testing.T) {
	_, got := parseFile(t, "budgets: {t: {like: link, key: \"header:X-Api-Key\"}}\nroutes:\n  - {group: t, pattern: GET /x}")
	for _, want := range []string{"every limit of the route is keyed by a value the client chooses", "a layer in front of admit",
		"stack a limit keyed by the peer", "a check in the app runs only after admit has admitted the request"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want it to hold %q", got, want)
		}
	}
}

// TestValidateAppliesStoreRules: a budget only the shared store refuses is
// refused by validate too, with the store named by --store, and without a
// connection to it.
func TestValidateAppliesStoreRules(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The listener reports every connection it takes, in the order the
	// kernel queued them: any dial validate made before it returned comes
	// before the test's own last one.
	accepted := make(chan string, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	redisStore, pgStore := "redis://"+addr, "postgres://admit@"+addr+"/admit"
	const (
		shortWindow = "budgets: {api: {algorithm: fixed-window, limit: 5, window: 500us}}\nroutes:\n  - {group: api, pattern: GET /x}"
		longSpan    = "budgets: {api: {rate: 0.0001, burst: 1000}}\nroutes:\n  - {group: api, pattern: GET /x}"
		slowRate    = "budgets: {api: {rate: 0.00000000001, burst: 1}}\nroutes:\n  - {group: api, pattern: GET /x}"
	)
	for _, tc := range []struct {
		name, yaml, store string
		want              string // the error after the file's name; "" when valid
	}{
		{"redis window under 1ms", shortWindow, redisStore, "line 1: budgets.api: limit 5 per window 500µs cannot be decided on the shared store: window 500µs, the Redis store needs at least 1ms"},
		{"redis span past 2^53ns", longSpan, redisStore, "line 1: budgets.api: rate 0.0001 and burst 1000 cannot be decided on the shared store: burst and cost 1 span more than the Redis store's 2^53ns (about 104 days)"},
		{"redis rate too low", slowRate, redisStore, "line 1: budgets.api: rate 1e-11 is too low for a shared store's window"},
		{"postgres rate too low", slowRate, pgStore, "line 1: budgets.api: rate 1e-11 is too low for a shared store's window"},
		{"postgres window under 1ms", shortWindow, pgStore, ""},
		{"memory window under 1ms", shortWindow, "memory", ""},
		{"memory span past 2^53ns", longSpan, "memory", ""},
		{"redis within its rules", "routes:\n  - {group: link, pattern: GET /x}", redisStore, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml+"\n")
			out, err := runArgs(t, nil, "validate", "--upstream", "http://app", "--config", path, "--store", tc.store)
			var uerr usageError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want it valid", err)
			case tc.want == "" && !strings.HasSuffix(out, "ok\n"):
				t.Errorf("output %q, want it to end in ok", out)
			case tc.want != "" && (!errors.As(err, &uerr) || err.Error() != fmt.Sprintf("admit: --config %q: %s", path, tc.want)):
				t.Errorf("got %v, want a usage error %q after the file's name", err, tc.want)
			}
		})
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dialed := 0
	for a := range accepted {
		if a == c.LocalAddr().String() {
			break
		}
		dialed++
	}
	if n := dialed; n != 0 {
		t.Errorf("validate connected to the store %d times, want never", n)
	}
}

// TestAdminClientReadsNeedTheToken: a client's state tells whether an
// address or a key's value was seen, so with an admin token configured
// reading it needs the token, while /metrics, /healthz and the list of
// groups stay open to Prometheus and probes.
func TestAdminClientReadsNeedTheToken(t *testing.T) {
	const token = "read-token"
	r := startAdmin(t, "--admin-token-file", tokenFile(t, token))
	r.answers(t, 1, http.StatusOK, "GET", "/l/a", "")
	const path = "/admit/groups/link/clients/127.0.0.1"
	var refusal struct{ Error string }
	if code := r.admin(t, "GET", path, "", &refusal); code != http.StatusUnauthorized {
		t.Errorf("GET %s without the token: got %d %q, want 401", path, code, refusal.Error)
	}
	if code := r.admin(t, "GET", path, "wrong", &refusal); code != http.StatusUnauthorized {
		t.Errorf("GET %s with a wrong token: got %d %q, want 401", path, code, refusal.Error)
	}
	var got clientJSON
	if code := r.admin(t, "GET", path, token, &got); code != http.StatusOK || got.Bucket != "entry" {
		t.Errorf("GET %s with the token: got %d %s, want 200 and its entry", path, code, describeClient(got))
	}
	if code := r.admin(t, "GET", "/admit/groups", "", nil); code != http.StatusOK {
		t.Errorf("GET /admit/groups without the token: got %d, want 200", code)
	}
	for _, open := range []string{"/metrics", "/healthz"} {
		resp, err := r.client.Get(r.metrics + open)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without the token: got %d, want 200", open, resp.StatusCode)
		}
	}
}

// TestAdminClientReadsWithoutTokenStayOnThisHost: without an admin token,
// client reads are answered to this host only, as Envoy's admin interface
// and HAProxy's stats socket are meant to be reached; the metrics listener
// may listen on every interface for Prometheus.
func TestAdminClientReadsWithoutTokenStayOnThisHost(t *testing.T) {
	r := startAdmin(t)
	mux := http.NewServeMux()
	r.s.adminRoutes(mux)
	for _, tc := range []struct {
		from string
		code int
	}{
		{"127.0.0.1:4000", http.StatusOK},
		{"[::1]:4000", http.StatusOK},
		{"[::ffff:127.0.0.1]:4000", http.StatusOK},
		{"192.0.2.7:4000", http.StatusForbidden},
		{"[2001:db8::7]:4000", http.StatusForbidden},
		{"not an address", http.StatusForbidden},
	} {
		req := httptest.NewRequest("GET", "/admit/groups/link/clients/127.0.0.1", nil)
		req.RemoteAddr = tc.from
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		if w.Code != tc.code {
			t.Errorf("from %s: got %d %s, want %d", tc.from, w.Code, w.Body, tc.code)
		}
		if tc.code == http.StatusForbidden && !strings.Contains(w.Body.String(), "--admin-token-file") {
			t.Errorf("from %s: got %s, want it to name --admin-token-file", tc.from, w.Body)
		}
		req = httptest.NewRequest("GET", "/admit/groups", nil)
		req.RemoteAddr = tc.from
		w = httptest.NewRecorder()
		if mux.ServeHTTP(w, req); w.Code != http.StatusOK {
			t.Errorf("GET /admit/groups from %s: got %d, want 200", tc.from, w.Code)
		}
	}
}

// TestAdminTokenRevokedByANewOne: a reload without the token file is
// refused and the old token stays valid, so revoking a token means writing
// a new one; a reload then takes it, and the old one is refused.
func TestAdminTokenRevokedByANewOne(t *testing.T) {
	file := tokenFile(t, "old-token")
	r, _, _ := reloadable(t, linkOfFive, nil, "--upstream", upstreamApp(t).URL, "--admin-token-file", file)
	const path = "/admit/groups/link/clients/127.0.0.1"
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := r.s.reload(); err == nil || !strings.Contains(err.Error(), "--admin-token-file") {
		t.Fatalf("reload without the token file: got %v, want it refused naming --admin-token-file", err)
	}
	if code := r.admin(t, "DELETE", path, "old-token", nil); code != http.StatusOK {
		t.Errorf("the old token after a refused reload: got %d, want 200 (it stays valid)", code)
	}
	if err := os.WriteFile(file, []byte("new-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.s.reload(); err != nil {
		t.Fatalf("reload with a new token: %v", err)
	}
	if code := r.admin(t, "DELETE", path, "old-token", nil); code != http.StatusUnauthorized {
		t.Errorf("the old token after the new one is loaded: got %d, want 401", code)
	}
	if code := r.admin(t, "DELETE", path, "new-token", nil); code != http.StatusOK {
		t.Errorf("the new token: got %d, want 200", code)
	}
}

// TestStoreUsageNamesEveryRedisTopology: -h lists the Redis URLs --store
// takes, as its error does.
func TestStoreUsageNamesEveryRedisTopology(t *testing.T) {
	for _, o := range config.Options {
		if o.Name != "store" {
			continue
		}
		for _, want := range []string{"postgres://", "redis://", "redis+cluster://", "redis+sentinel://"} {
			if !strings.Contains(o.Usage, want) {
				t.Errorf("--store usage %q lacks %s", o.Usage, want)
			}
		}
	}
}
