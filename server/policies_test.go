package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/admitgo/admit/internal/testpg"
)

// policyApp starts admit in front of rec with the config file yaml and extra
// flags.
func policyApp(t *testing.T, rec *recorder, yaml string, extra ...string) *running {
	t.Helper()
	return start(t, append([]string{"--upstream", rec.url, "--config", writeConfig(t, yaml)}, extra...)...)
}

// get sends GET path from local address from with headers ("Name: value")
// and returns the status.
func get(t *testing.T, r *running, from, path string, headers ...string) int {
	t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	return rawFrom(t, from, strings.TrimPrefix(r.url, "http://"), req+"\r\n").status
}

// count sends n requests and returns how many were answered 200.
func countOK(t *testing.T, n int, send func() int) int {
	t.Helper()
	ok := 0
	for range n {
		if send() == http.StatusOK {
			ok++
		}
	}
	return ok
}

// TestPerAddressThenPerTenant is the stacking case of the docs: a route
// limited per address, then per tenant. An address refused by its own limit
// leaves the tenant's budget whole; a second address gets exactly what is
// left of it.
func TestPerAddressThenPerTenant(t *testing.T) {
	r := policyApp(t, newRecorder(t), `
budgets:
  per-address: {rate: 0.001, burst: 3}
  tenant: {rate: 0.001, burst: 5, key: "path:tenant", key_authenticated: true, per_client: 100, inflight: 100}
routes:
  - {group: [per-address, tenant], pattern: "GET /t/{tenant}/items"}
`)
	if got := countOK(t, 10, func() int { return get(t, r, "127.0.0.2", "/t/acme/items") }); got != 3 {
		t.Fatalf("first address: %d admitted, want its own burst, 3", got)
	}
	if got := countOK(t, 10, func() int { return get(t, r, "127.0.0.3", "/t/acme/items") }); got != 2 {
		t.Fatalf("second address: %d admitted, want what is left of the tenant's, 2", got)
	}
	if got := countOK(t, 3, func() int { return get(t, r, "127.0.0.4", "/t/other/items") }); got != 3 {
		t.Errorf("another tenant: %d admitted, want 3", got)
	}
	if got := r.count(t, "tenant", "rate_limited"); got != 8 {
		t.Errorf("tenant rate_limited: got %d, want the second address's 8", got)
	}
}

// TestHeaderKeyAcrossReplicas runs two replicas on one PostgreSQL with a
// fixed window per Authorization value: they admit exactly the limit
// between them, and the raw value is never in the table, in a log line at
// any level, or in a metric.
func TestHeaderKeyAcrossReplicas(t *testing.T) {
	const token = "Bearer s3cret-token-value"
	db := testpg.New(t)
	table := db.Schema + ".admit_quota"
	yaml := `
budgets:
  per-token:
    algorithm: fixed-window
    limit: 4
    window: 1h
    key: header:Authorization
    key_authenticated: true
    on_missing: reject
routes:
  - {group: per-token, pattern: "GET /api/{x}"}
`
	var logs syncBuffer
	replicas := make([]*running, 2)
	for i := range replicas {
		cfg := serverConfig(t, "--upstream", newRecorder(t).url, "--config", writeConfig(t, yaml),
			"--store", testpg.URL(), "--store-table", table, "--log-level", "debug")
		replicas[i] = startWith(t, cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			status := get(t, replicas[i%2], fmt.Sprintf("127.0.0.%d", 2+i), "/api/x", "Authorization: "+token)
			mu.Lock()
			got[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[http.StatusOK] != 4 || got[http.StatusTooManyRequests] != 8 {
		t.Errorf("12 requests with one token over two replicas: got %v, want 4 of 200 and 8 of 429", got)
	}
	if status := get(t, replicas[0], "127.0.0.2", "/api/x"); status != http.StatusUnauthorized {
		t.Errorf("without Authorization (on_missing: reject): got %d, want 401", status)
	}
	secret := "s3cret-token-value"
	rows, err := db.Pool(t).Query(context.Background(), "SELECT bucket FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var bucket string
		if err := rows.Scan(&bucket); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(bucket), "s3cret") {
			t.Errorf("the store's row %q holds the raw value", bucket)
		}
	}
	rows.Close()
	for _, r := range replicas {
		for _, line := range r.scrape(t, "") {
			if strings.Contains(line, secret) {
				t.Errorf("a metric holds the raw value: %s", line)
			}
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the logs hold the raw value:\n%s", logs.String())
	}
}

func TestCostsGlobalAndPrefixes(t *testing.T) {
	r := policyApp(t, newRecorder(t), `
budgets:
  bulk: {like: link, rate: 0.001, burst: 10}
  everyone: {rate: 0.001, burst: 3, key: global}
  subnet: {rate: 0.001, burst: 2, ipv4_prefix: 24}
routes:
  - {group: bulk, pattern: "POST /bulk", cost: 5}
  - {group: bulk, pattern: "GET /one"}
  - {group: everyone, pattern: "GET /g"}
  - {group: subnet, pattern: "GET /s"}
`)
	post := func(from string) int {
		return rawFrom(t, from, strings.TrimPrefix(r.url, "http://"), "POST /bulk HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").status
	}
	if got := countOK(t, 3, func() int { return post("127.0.0.2") }); got != 2 {
		t.Errorf("cost 5 on a burst of 10: %d admitted, want 2", got)
	}
	if status := get(t, r, "127.0.0.2", "/one"); status != http.StatusTooManyRequests {
		t.Errorf("a cost-1 route of the spent group: got %d, want 429", status)
	}
	if got := countOK(t, 2, func() int { return get(t, r, "127.0.0.2", "/g") }) + countOK(t, 2, func() int { return get(t, r, "127.0.1.2", "/g") }); got != 3 {
		t.Errorf("global: %d admitted from two addresses, want the one burst of 3", got)
	}
	same := countOK(t, 2, func() int { return get(t, r, "127.0.0.5", "/s") }) + countOK(t, 2, func() int { return get(t, r, "127.0.0.6", "/s") })
	other := countOK(t, 2, func() int { return get(t, r, "127.0.1.5", "/s") })
	if same != 2 || other != 2 {
		t.Errorf("ipv4_prefix 24: one /24 got %d, another %d, want 2 and 2", same, other)
	}
}

func TestPolicyConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown like", `budgets: {api: {like: links, rate: 1, burst: 2}}`, `line 1: budgets.api.like: unknown group "links": want webhook, link or health`},
		{"unknown key kind", `budgets: {api: {rate: 1, burst: 2, key: "cookie:sid"}}`, `line 1: budgets.api.key: unknown key "cookie:sid": want peer, global, header:NAME or path:NAME`},
		{"fixed window without a window", `budgets: {api: {algorithm: fixed-window, limit: 5}}`, `line 1: budgets.api: a fixed-window group needs a positive limit and window`},
		{"fixed window without a limit", `budgets: {api: {algorithm: fixed-window, window: 1m}}`, `line 1: budgets.api: a fixed-window group needs a positive limit and window`},
		{"unknown algorithm", `budgets: {api: {algorithm: leaky, rate: 1, burst: 2}}`, `line 1: budgets.api.algorithm: unknown algorithm "leaky": want token-bucket or fixed-window`},
		{"a group of its own without a rate", `budgets: {api: {burst: 2}}`, `line 1: budgets.api: a group of its own needs its rate and burst`},
		{"bad group name", `budgets: {API: {like: link}}`, `line 1: budgets: group name "API": want lowercase letters, digits, - and _`},
		{"prefix on a header key", `budgets: {api: {rate: 1, burst: 2, key: "header:X-Key", ipv4_prefix: 24}}`, `line 1: budgets.api: ipv4_prefix and ipv6_prefix widen a key by the client's address (key: peer), and this key is another`},
		{"bad prefix", `budgets: {api: {rate: 1, burst: 2, ipv4_prefix: 33}}`, `line 1: budgets.api.ipv4_prefix: want a prefix length from 1 to 32`},
		{"on_missing on a peer key", `budgets: {api: {rate: 1, burst: 2, on_missing: reject}}`, `line 1: budgets.api: on_missing and key_authenticated apply to a key by header:NAME or path:NAME`},
		{"unknown group in a route", "routes:\n  - {group: [link, nope], pattern: GET /x}", `line 2: routes[0]: unknown group "nope"`},
		{"cost 0", "routes:\n  - {group: link, pattern: GET /x, cost: 0}", `line 2: routes[0].cost: must be at least 1, got 0`},
		{"cost above the burst", "routes:\n  - {group: link, pattern: GET /x, cost: 21}", `line 2: routes[0]: cost 21 is more than group "link" ever admits (its burst is 20)`},
		{"path key the pattern lacks", "budgets: {t: {like: link, key: \"path:tenant\", key_authenticated: true}}\nroutes:\n  - {group: [link, t], pattern: \"GET /x/{id}\"}", `line 3: routes[0]: group "t" is keyed by path:tenant, but pattern "GET /x/{id}" has no {tenant} wildcard`},
		{"every limit chosen by the client", "budgets: {t: {like: link, key: \"header:X-Api-Key\"}}\nroutes:\n  - {group: t, pattern: GET /x}", `line 3: routes[0]: every limit of the route is keyed by a value the client chooses (t: header:X-Api-Key)`},
		{"a group twice", "routes:\n  - {group: [link, link], pattern: GET /x}", `line 2: routes[0] "GET /x": group "link" is listed twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.yaml+"\n")
			_, err := parse(t, []string{"--config", path}, nil)
			want := fmt.Sprintf("admit: --config %q: %s", path, tc.want)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v, want an error starting %q", err, want)
			}
		})
	}
	// On the command line, a route names its groups the same way.
	if _, err := parse(t, []string{"--route", "link,nope=GET /x"}, nil); err == nil || !strings.HasPrefix(err.Error(), `admit: --route "link,nope=GET /x": unknown group "nope"`) {
		t.Errorf("--route with an unknown group: got %v", err)
	}
}

// TestExplainStacked prints every limit of a stacked route in order, with
// its key, hashed where the client chose it.
func TestExplainStacked(t *testing.T) {
	cfg := writeConfig(t, `
budgets:
  per-address: {rate: 1, burst: 10}
  tenant: {algorithm: fixed-window, limit: 100, window: 1m, key: "path:tenant", key_authenticated: true}
  token: {rate: 5, burst: 5, key: "header:X-Api-Key", key_authenticated: true}
routes:
  - {group: [per-address, tenant, token], pattern: "GET /t/{tenant}/items", cost: 2}
`)
	out, err := runArgs(t, nil, "explain", "--peer", "192.0.2.7:1", "--config", cfg, "-H", "X-Api-Key: k-123", "GET", "/t/acme/items")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"group    per-address, tenant, token (route GET /t/{tenant}/items)",
		"limit    per-address: token-bucket rate 1/s, burst 10, cost 2, key peer = 192.0.2.7/32",
		"limit    tenant: fixed-window limit 100 per 1m, cost 2, key path:tenant = ",
		"limit    token: token-bucket rate 5/s, burst 5, cost 2, key header:X-Api-Key = ",
		"(the value's SHA-256, never the value)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "k-123") {
		t.Errorf("explain prints the raw header value:\n%s", out)
	}
}
