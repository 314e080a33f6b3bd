package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/server/internal/config"
)

// TestUnderscoreSpellingOfKeyHeader checks that a spelling of a key header
// with underscores, which CGI and WSGI servers merge with the header itself,
// is dropped before the request is keyed: the app must read the value admit
// keyed by, not one admit never saw.
func TestUnderscoreSpellingOfKeyHeader(t *testing.T) {
	rec := newRecorder(t)
	r := policyApp(t, rec, `
budgets:
  per-key: {rate: 0.001, burst: 2, key: "header:X-Api-Key", key_authenticated: true, per_client: 100, inflight: 100}
routes:
  - {group: per-key, pattern: "GET /api/{x}"}
`)
	for _, tc := range []struct {
		name    string
		path    string
		headers []string
		want    []string // the values of X-Api-Key, in any spelling, the upstream receives
	}{
		{"beside the header", "/api/x", []string{"X-Api-Key: fresh", "X_Api_Key: real", "x_api-key: real"}, []string{"fresh"}},
		{"alone", "/api/x", []string{"X_API_KEY: real"}, nil},
		{"on an unrouted path", "/other", []string{"X-Api-Key: fresh", "X_Api_Key: real"}, []string{"fresh"}},
	} {
		if st := get(t, r, "127.0.0.2", tc.path, append(tc.headers, "X_Other_Header: kept")...); st != http.StatusOK {
			t.Fatalf("%s: got %d, want 200", tc.name, st)
		}
		h := rec.last().Header
		if got := headerFolded(h, "X-Api-Key"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: upstream received X-Api-Key spellings %q, want %q", tc.name, got, tc.want)
		}
		if got := h.Values("X_other_header"); !slices.Equal(got, []string{"kept"}) {
			t.Errorf("%s: X_Other_Header: got %q, want it passed through", tc.name, got)
		}
	}
	// The key's budget holds whatever underscore spelling rides along.
	r.answers(t, 1, http.StatusOK, "GET", "/api/x", "", "X-Api-Key: one", "X_Api_Key: a")
	r.answers(t, 1, http.StatusOK, "GET", "/api/x", "", "X-Api-Key: one", "X_Api_Key: b")
	r.rejected(t, "GET", "/api/x", "", "X-Api-Key: one", "X_Api_Key: c")
}

// TestConnectionNamedKeyHeader checks that a key header the client names in
// Connection, which no hop forwards (RFC 9110, section 7.6.1), is not keyed
// by: the app never receives the value, so a budget keyed by it would be one
// the client picks afresh on every request. Such a request is keyed as one
// without the header, by its client.
func TestConnectionNamedKeyHeader(t *testing.T) {
	rec := newRecorder(t)
	r := policyApp(t, rec, `
budgets:
  per-key: {rate: 0.001, burst: 2, key: "header:X-Api-Key", key_authenticated: true, per_client: 100, inflight: 100}
routes:
  - {group: per-key, pattern: "GET /api/{x}"}
`)
	n := 0
	got := countOK(t, 6, func() int {
		n++
		// get's own Connection line says close; a second line adds the key
		// header's name, as a client may spell it.
		return get(t, r, "127.0.0.2", "/api/x", "Connection: X-Api-Key", fmt.Sprintf("X-Api-Key: fresh-%d", n))
	})
	if got != 2 {
		t.Errorf("6 requests naming their key header in Connection: %d admitted, want the client's burst, 2", got)
	}
	if h := rec.last().Header; headerFolded(h, "X-Api-Key") != nil {
		t.Errorf("upstream received X-Api-Key %q, a header the client named in Connection", headerFolded(h, "X-Api-Key"))
	}
	// A key header not named in Connection keeps its own budget.
	r.answers(t, 2, http.StatusOK, "GET", "/api/x", "", "X-Api-Key: own")
}

// TestConnectionNamedForwardingHeader checks that a client cannot take a
// trusted proxy's X-Forwarded-For away by naming it in Connection: each
// client behind the proxy keeps its own budget, rather than all of them
// sharing the proxy's (or passing as the proxy's address would).
func TestConnectionNamedForwardingHeader(t *testing.T) {
	r := policyApp(t, newRecorder(t), `
budgets:
  per-address: {rate: 0.001, burst: 1}
routes:
  - {group: per-address, pattern: "GET /x"}
`, "--trusted-proxy", "127.0.0.5")
	n := 0
	got := countOK(t, 4, func() int {
		n++
		return get(t, r, "127.0.0.5", "/x", "Connection: X-Forwarded-For", fmt.Sprintf("X-Forwarded-For: 203.0.113.%d", n))
	})
	if got != 4 {
		t.Errorf("4 clients behind the proxy, each naming X-Forwarded-For in Connection: %d admitted, want 4 (one each)", got)
	}
}

// TestDropConnectionNamed checks which headers a Connection field takes out
// of the request admit judges, and that the common case, a Connection that
// names no header the request holds, costs no allocation.
func TestDropConnectionNamed(t *testing.T) {
	for _, tc := range []struct {
		conn []string
		want []string // the names left, sorted
	}{
		{[]string{"keep-alive"}, []string{"Connection", "Upgrade", "X-Api-Key", "X-Other"}},
		{[]string{"x-api-key"}, []string{"Connection", "Upgrade", "X-Other"}},
		{[]string{"close", " X-API-KEY ,x-other"}, []string{"Connection", "Upgrade"}},
		{[]string{"Upgrade, Connection"}, []string{"Connection", "Upgrade", "X-Api-Key", "X-Other"}},
		{[]string{"X-Forwarded-For, forwarded"}, []string{"Connection", "Upgrade", "X-Api-Key", "X-Other"}},
	} {
		h := http.Header{"Connection": tc.conn, "Upgrade": {"websocket"}, "X-Api-Key": {"k"}, "X-Other": {"o"}}
		out := dropConnectionNamed(h)
		if out == nil {
			out = h
		}
		if got := slices.Sorted(maps.Keys(out)); !slices.Equal(got, tc.want) {
			t.Errorf("Connection %q: left %q, want %q", tc.conn, got, tc.want)
		}
		if len(h) != 4 {
			t.Errorf("Connection %q: the request's own header changed", tc.conn)
		}
	}
	h := http.Header{"Connection": {"keep-alive"}, "X-Api-Key": {"k"}}
	if n := testing.AllocsPerRun(100, func() { dropConnectionNamed(h) }); n != 0 {
		t.Errorf("Connection naming no header: %v allocations, want 0", n)
	}
}

// TestAmbiguousMethodOverrideRefused checks that, with --method-override,
// an override admit cannot read as one method is refused rather than
// matched as the request's own method only: Express's method-override runs
// "GET,POST" as a GET, and an app may honour an override line past the
// ones admit considers.
func TestAmbiguousMethodOverrideRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"a list", []string{"X-HTTP-Method-Override: GET,POST"}},
		{"a list with spaces", []string{"X-HTTP-Method: GET , POST"}},
		{"not a token", []string{"X-Method-Override: GET/1"}},
		{"a method admit does not serve", []string{"X-HTTP-Method-Override: CONNECT"}},
		{"more lines than admit considers", []string{"X-HTTP-Method-Override: FOO", "X-HTTP-Method-Override: BAR",
			"X-HTTP-Method-Override: BAZ", "X-HTTP-Method: GET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t)
			r := limitedApp(t, rec, "--method-override")
			if resp, body := r.do(t, "POST", "/l/x", "", tc.headers...); resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %d %q, want 400", resp.StatusCode, body)
			}
			if n := rec.count(); n != 0 {
				t.Errorf("the upstream served %d, want 0", n)
			}
			if got := r.scrapeCount(t, `admit_server_malformed_total{admit_server_reason="method_override"`); got != 1 {
				t.Errorf("admit_server_malformed_total for method_override: got %d, want 1", got)
			}
			// Without --method-override the headers are removed, so
			// nothing is ambiguous.
			r = limitedApp(t, rec)
			r.answers(t, 1, http.StatusOK, "POST", "/l/x", "", tc.headers...)
		})
	}
	// Up to as many lines as admit considers, each one method, are matched.
	r := limitedApp(t, newRecorder(t), "--method-override")
	lines := []string{"X-HTTP-Method-Override: PUT", "X-HTTP-Method: get", "X-Method-Override:  GET "}
	r.answers(t, linkTestBurst, http.StatusOK, "POST", "/l/x", "", lines...)
	r.rejected(t, "POST", "/l/x", "", lines...)
}

func TestExplainRefusesAmbiguousOverride(t *testing.T) {
	out, err := runArgs(t, nil, "explain", "--peer", "192.0.2.1:1", "--demo", "--method-override",
		"-H", "X-HTTP-Method-Override: GET,POST", "POST", "/l/abc")
	if err != nil {
		t.Fatal(err)
	}
	if want := "refused  400 Bad Request: the method override headers must name one method a line"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestPathAndHostOverridesStripped checks that the headers some stacks
// route by instead of the request line (Symfony and Zend's X-Original-URL,
// IIS URL Rewrite's X-Rewrite-URL, forward-auth servers' X-Forwarded-Uri)
// never reach the upstream, in any spelling: admit matched the request
// line, and the app must route what admit matched.
func TestPathAndHostOverridesStripped(t *testing.T) {
	rec := newRecorder(t)
	r := limitedApp(t, rec, "--method-override")
	names := []string{"X-Original-URL", "X-Rewrite-URL", "X-Original-URI", "X-Envoy-Original-Path",
		"X-Forwarded-Uri", "X-Original-Method", "X-Forwarded-Method", "X-Original-Host", "X-Forwarded-Server"}
	var headers []string
	for _, name := range names {
		headers = append(headers, name+": /l/x", strings.ReplaceAll(name, "-", "_")+": /l/x")
	}
	r.answers(t, 1, http.StatusOK, "GET", "/u/x", "", headers...)
	h := rec.last().Header
	for _, name := range names {
		if v := headerFolded(h, name); v != nil {
			t.Errorf("upstream received %s: %q, want it removed", name, v)
		}
	}
}

// TestUpstreamDocsNameEveryManagedHeader keeps docs/operators.md ("Proxy
// facts") naming every row of factTable, with its family and readers.
func TestUpstreamDocsNameEveryManagedHeader(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "### Proxy facts")
	section, _, _ = strings.Cut(section, "\n#")
	for _, row := range factTable {
		line := "| `" + row.family.String() + "` | `" + row.pattern + "` | " + row.readers + " |"
		if !strings.Contains(section, line) {
			t.Errorf("docs/operators.md, Proxy facts: want the row\n%s", line)
		}
	}
}

// TestForwardedHostAndProtoFromTrustedProxy checks what the upstream
// receives as X-Forwarded-Host and X-Forwarded-Proto from a trusted proxy:
// the right-most element, which the proxy nearest admit wrote (anything to
// its left came from the client through a proxy that appends), in
// canonical form, and admit's own answer when that element is not a host or
// a scheme.
func TestForwardedHostAndProtoFromTrustedProxy(t *testing.T) {
	rec := newRecorder(t)
	// No route names a host; one that does makes X-Forwarded-Host the
	// matched host (TestHostRoutesForwardTheMatchedHost).
	cfg := writeConfig(t, `
routes:
  - {group: link, pattern: "GET /l/{id}"}
`)
	r := start(t, "--upstream", rec.url, "--config", cfg, "--trusted-proxy", "127.0.0.1/32")
	addr := strings.TrimPrefix(r.url, "http://")
	for _, tc := range []struct {
		name, headers string
		host, proto   string
	}{
		{"as sent", "X-Forwarded-Host: app.example\r\nX-Forwarded-Proto: https", "app.example", "https"},
		{"a list", "X-Forwarded-Host: evil.example, app.example\r\nX-Forwarded-Proto: http, https", "app.example", "https"},
		{"several lines", "X-Forwarded-Host: evil.example\r\nX-Forwarded-Host: app.example", "app.example", "http"},
		{"canonical", "X-Forwarded-Host: App.Example.:443\r\nX-Forwarded-Proto: HTTPS", "app.example", "https"},
		{"the default port of the forwarded scheme", "X-Forwarded-Host: app.example:80", "app.example", "http"},
		{"another port", "X-Forwarded-Host: app.example:8443\r\nX-Forwarded-Proto: https", "app.example:8443", "https"},
		{"an IPv6 literal", "X-Forwarded-Host: [2001:DB8::1]:8080", "[2001:db8::1]:8080", "http"},
		{"not a host", "X-Forwarded-Host: app.example/x\r\nX-Forwarded-Proto: ftp", "front.example", "http"},
		{"a host with a user", "X-Forwarded-Host: user@evil.example", "front.example", "http"},
		{"an escape", "X-Forwarded-Host: %65vil.example", "front.example", "http"},
		{"an empty element last", "X-Forwarded-Host: app.example,\r\nX-Forwarded-Proto: https,", "front.example", "http"},
		{"not a port", "X-Forwarded-Host: app.example:x", "front.example", "http"},
		{"a bad IPv6 literal", "X-Forwarded-Host: [evil]", "front.example", "http"},
	} {
		a := raw(t, addr, "GET /u/x HTTP/1.1\r\nHost: Front.Example\r\n"+tc.headers+"\r\nConnection: close\r\n\r\n")
		if a.status != http.StatusOK {
			t.Fatalf("%s: got %d, want 200", tc.name, a.status)
		}
		h := rec.last().Header
		if got := h.Values("X-Forwarded-Host"); !slices.Equal(got, []string{tc.host}) {
			t.Errorf("%s: X-Forwarded-Host: got %q, want %q", tc.name, got, tc.host)
		}
		if got := h.Values("X-Forwarded-Proto"); !slices.Equal(got, []string{tc.proto}) {
			t.Errorf("%s: X-Forwarded-Proto: got %q, want %q", tc.name, got, tc.proto)
		}
	}
}

// TestMalformedOverHTTP2KeepsTheConnection checks that refusing a malformed
// request over HTTP/2 does not shut the connection down: net/http's HTTP/2
// server turns a handler's Connection: close into a GOAWAY, which would
// make every client multiplexed on the connection (behind an h2 balancer)
// reconnect for one client's request.
func TestMalformedOverHTTP2KeepsTheConnection(t *testing.T) {
	r := start(t, append(appRoutes(upstreamApp(t).URL), "--h2c", "--method-override")...)
	client := h2cClient()
	t.Cleanup(client.CloseIdleConnections)
	// The connections requests were sent on. The transport may dial a
	// spare one while it waits, so dials are no measure; after a GOAWAY,
	// though, the next request is sent, or retried, on a new connection.
	var conns []net.Conn
	send := func(path string, headers ...string) int {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if !slices.Contains(conns, i.Conn) {
				conns = append(conns, i.Conn)
			}
		}}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", r.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range headers {
			name, value, _ := strings.Cut(h, ": ")
			req.Header.Add(name, value)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Fatalf("GET %s: answered over %s, want HTTP/2", path, resp.Proto)
		}
		return resp.StatusCode
	}
	if st := send("/u/a"); st != http.StatusOK {
		t.Fatalf("GET /u/a: got %d, want 200", st)
	}
	for _, bad := range []struct {
		path    string
		headers []string
	}{
		{"/u/%00", nil},
		{"/u/b", []string{"X-HTTP-Method-Override: GET,POST"}},
	} {
		if st := send(bad.path, bad.headers...); st != http.StatusBadRequest {
			t.Fatalf("GET %s: got %d, want 400", bad.path, st)
		}
		if st := send("/u/c"); st != http.StatusOK {
			t.Fatalf("GET /u/c: got %d, want 200", st)
		}
	}
	if len(conns) != 1 {
		t.Errorf("requests went over %d connections, want 1: a malformed request closed the shared connection", len(conns))
	}
}

// TestExplainSaysAHostPatternNeedsAnUpstreamRoutingByHost checks that
// explain warns where a host-scoped limit holds only if the upstream
// routes by X-Forwarded-Host: the upstream receives its own Host, so one
// that ignores the host serves any other host's request unlimited.
func TestExplainSaysAHostPatternNeedsAnUpstreamRoutingByHost(t *testing.T) {
	out, err := runArgs(t, nil, "explain", "--peer", "192.0.2.1:1", "--route", "link=GET example.com/h/{id}",
		"-H", "Host: Example.COM", "GET", "/h/x")
	if err != nil {
		t.Fatal(err)
	}
	want := "host     the route limits only host example.com: the upstream must route by X-Forwarded-Host"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	out, err = runArgs(t, nil, "explain", "--peer", "192.0.2.1:1", "--route", "link=GET /h/{id}", "GET", "/h/x")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "X-Forwarded-Host") {
		t.Errorf("a route without a host: output names X-Forwarded-Host:\n%s", out)
	}
}

// TestFoldedConflictSaysWhatHelps checks that routes which conflict once
// case is folded are refused with advice that works, naming the route as
// --route takes it.
func TestFoldedConflictSaysWhatHelps(t *testing.T) {
	link := []admit.Group{admit.GroupLink}
	c := config.Config{RouteFolding: true}
	_, err := c.RouteTable([]config.Route{{Groups: link, Pattern: "GET /docs/{p}"}, {Groups: link, Pattern: "GET /Docs/{p}"}})
	if err == nil {
		t.Fatal("got no error, want the folded conflict refused")
	}
	const want = `admit: route "link=GET /Docs/{p}" conflicts with an earlier route once case is folded`
	if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, "remove one of them, or set --route-folding=false") {
		t.Errorf("got %q, want it to start %q and say to remove one of them or set --route-folding=false", msg, want)
	}
}

// TestCombinedRoutesKeyByEveryRoutesPathValues checks that a request
// matched by several routes through folding is keyed, in each route's
// limits, by that route's own wildcards, whichever route matched first.
func TestCombinedRoutesKeyByEveryRoutesPathValues(t *testing.T) {
	const yaml = `
budgets:
  per-address: {rate: 0.001, burst: 100, per_client: 100, inflight: 100}
  tenant: {rate: 0.001, burst: 3, key: "path:tenant", key_authenticated: true, on_missing: reject, per_client: 100, inflight: 100}
routes:
  - {group: per-address, pattern: "GET /t/{tenant}"}
  - {group: [per-address, tenant], pattern: "GET /t/{tenant}/"}
`
	out, err := runArgs(t, nil, "explain", "--peer", "192.0.2.1:1", "--config", writeConfig(t, yaml), "GET", "/t/acme")
	if err != nil {
		t.Fatal(err)
	}
	if want := "key path:tenant = "; !strings.Contains(out, want) || strings.Contains(out, want+"none") {
		t.Errorf("explain: want the tenant limit keyed by the path value:\n%s", out)
	}
	r := policyApp(t, newRecorder(t), yaml)
	for _, path := range []string{"/t/acme", "/t/acme/", "/t/acme"} {
		r.answers(t, 1, http.StatusOK, "GET", path, "")
	}
	r.rejected(t, "GET", "/t/acme", "")
	r.answers(t, 1, http.StatusOK, "GET", "/t/other", "")
}

// TestCombinedRoutesCostWhatTheirLimitsHold checks that a request matched by
// routes of different costs, whose highest cost is more than one of the
// limits holds, is charged the most every limit holds, not one token.
func TestCombinedRoutesCostWhatTheirLimitsHold(t *testing.T) {
	r := policyApp(t, newRecorder(t), `
budgets:
  small: {rate: 0.001, burst: 5, per_client: 100, inflight: 100}
  big: {rate: 0.001, burst: 100, per_client: 100, inflight: 100}
routes:
  - {group: small, pattern: "GET /b/{x}"}
  - {group: big, pattern: "GET /b/{x}/", cost: 10}
`)
	r.answers(t, 1, http.StatusOK, "GET", "/b/x", "")
	r.rejected(t, "GET", "/b/x", "")
}

func TestExplainCombinedCost(t *testing.T) {
	cfg := writeConfig(t, `
budgets:
  small: {rate: 0.001, burst: 5}
  big: {rate: 0.001, burst: 100}
routes:
  - {group: small, pattern: "GET /b/{x}"}
  - {group: big, pattern: "GET /b/{x}/", cost: 10}
`)
	out, err := runArgs(t, nil, "explain", "--peer", "192.0.2.1:1", "--config", cfg, "GET", "/b/x")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"limit    small: token-bucket rate 0.001/s, burst 5, cost 5,", "limit    big: token-bucket rate 0.001/s, burst 100, cost 5,"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestHostRoutesForwardTheMatchedHost sends, through a trusted proxy that
// passes the client's X-Forwarded-Host on (as nginx and HAProxy do unless
// told otherwise), requests whose Host misses the host-scoped limited route
// while their X-Forwarded-Host names its host. The upstream, which routes
// host-scoped routes by X-Forwarded-Host, must be told the host admit
// matched, or each such request reaches the limited handler unlimited.
func TestHostRoutesForwardTheMatchedHost(t *testing.T) {
	rec := newRecorder(t)
	r := limitedApp(t, rec, "--trusted-proxy", "127.0.0.1/32")
	addr := strings.TrimPrefix(r.url, "http://")
	for range 2 * linkTestBurst {
		a := raw(t, addr, "GET /h/x HTTP/1.1\r\nHost: other.example\r\nX-Forwarded-Host: example.com\r\nConnection: close\r\n\r\n")
		if a.status != http.StatusOK {
			t.Fatalf("got %d, want 200: the route does not limit other.example", a.status)
		}
		if got := rec.last().Header.Values("X-Forwarded-Host"); !slices.Equal(got, []string{"other.example"}) {
			t.Fatalf("X-Forwarded-Host: got %q, want the host admit matched, other.example", got)
		}
	}
	answers := map[int]int{}
	for range 2 * linkTestBurst {
		answers[raw(t, addr, "GET /h/x HTTP/1.1\r\nHost: example.com\r\nX-Forwarded-Host: example.com\r\nConnection: close\r\n\r\n").status]++
	}
	if answers[http.StatusOK] != linkTestBurst {
		t.Errorf("Host example.com: answers %v, want %d admitted", answers, linkTestBurst)
	}
}

// TestExplainCostWithTheStore: explain caps a combined cost by the rules of
// the configured store, as the server does, without connecting to it: a
// shared store decides past a small shared bucket, and a local fallback
// holds only its share of the burst.
func TestExplainCostWithTheStore(t *testing.T) {
	cfg := writeConfig(t, `
budgets:
  small: {rate: 0.001, burst: 20, shared_burst: 5}
  big: {rate: 0.001, burst: 100}
routes:
  - {group: small, pattern: "GET /b/{x}"}
  - {group: big, pattern: "GET /b/{x}/", cost: 10}
`)
	const store = "redis://127.0.0.1:1/0" // nothing listens: explain must not ask
	for _, tc := range []struct {
		name  string
		flags []string
		cost  string
	}{
		{"memory: the shared bucket caps it", nil, "cost 5,"},
		{"a store decides past the shared bucket", []string{"--store", store}, "cost 10,"},
		// The fallback holds the smaller of burst and shared burst, 5, over
		// 4 replicas.
		{"a local fallback holds a quarter of it", []string{"--store", store, "--store-fail", "local", "--replicas", "4"}, "cost 1,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"explain", "--peer", "192.0.2.1:1", "--config", cfg}, tc.flags...)
			out, err := runArgs(t, nil, append(args, "GET", "/b/x")...)
			if err != nil {
				t.Fatal(err)
			}
			if want := "limit    big: token-bucket rate 0.001/s, burst 100, " + tc.cost; !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		})
	}
}

// TestRefusedBodyEndsCleanly: a request refused with its body unread,
// one longer than net/http's server drains, is answered, and then its
// connection half-closed, directly and behind the PROXY protocol: the
// client reads the refusal and the end of the stream, never a reset that
// could destroy the answer before the client reads it.
func TestRefusedBodyEndsCleanly(t *testing.T) {
	rec := newRecorder(t)
	cfg := writeConfig(t, `
routes:
  - {group: hook, pattern: "POST /p"}
budgets:
  hook: {rate: 0.001, burst: 1, per_client: 100, inflight: 100}
`)
	for _, tt := range []struct {
		name   string
		flags  []string
		prefix string
	}{
		{"direct", nil, ""},
		{"PROXY protocol", []string{"--proxy-protocol-from", "127.0.0.1/32"}, "PROXY TCP4 192.0.2.7 127.0.0.1 4000 80\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, append([]string{"--upstream", rec.url, "--config", cfg}, tt.flags...)...)
			addr := strings.TrimPrefix(r.url, "http://")
			if a := raw(t, addr, tt.prefix+"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nb"); a.status != http.StatusOK {
				t.Fatalf("the first request: %d, want 200", a.status)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(testTimeout))
			if _, err := io.WriteString(c, tt.prefix+"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"+strings.Repeat("b", 16<<10)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", resp.StatusCode)
			}
			if b, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the refusal: %q, %v; want the end of the stream", b, err)
			}
		})
	}
}
