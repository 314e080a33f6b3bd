package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// runArgs runs the program with args and an environment of env, and returns
// its output and error.
func runArgs(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a server that starts must stop at once
	err := run(ctx, args, func(k string) string { return env[k] }, &out, &out)
	return out.String(), err
}

func TestExplain(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // lines the output must hold
	}{
		{"untrusted peer's header ignored",
			[]string{"--peer", "203.0.113.9:5000", "-H", "X-Forwarded-For: 198.51.100.7", "--route", "link=GET /l/{id}", "GET", "/l/abc"}, nil,
			[]string{"group    link (route GET /l/{id})", "peer     203.0.113.9:5000 -> 203.0.113.9, not a trusted proxy",
				"why      untrusted-peer: ", "client   203.0.113.9", "key      203.0.113.9/32"}},
		{"trusted proxy's hop",
			[]string{"--peer", "10.0.0.5:41000", "-H", "X-Forwarded-For: 192.0.2.1, 198.51.100.7", "--trusted-proxy", "10.0.0.0/24", "--demo", "POST", "/hooks/github"}, nil,
			[]string{"group    webhook (route POST /hooks/{name})", "peer     10.0.0.5:41000 -> 10.0.0.5, a trusted proxy: its X-Forwarded-For is read",
				"header   X-Forwarded-For: 192.0.2.1, 198.51.100.7", "198.51.100.7", "not a trusted proxy: the client",
				"why      untrusted-hop: ", "key      198.51.100.7/32"}},
		{"trusted proxies from the environment, header lines merged",
			[]string{"--peer", "[::1]:41000", "-H", "X-Forwarded-For: 2001:db8::1", "-H", "X-Forwarded-For: 10.1.2.3", "GET", "/account"},
			map[string]string{"ADMIT_TRUSTED_PROXIES": "::1, 10.0.0.0/8"},
			[]string{"group    none: no route matches, so the request passes through unlimited",
				"trusted proxy: skipped", "client   2001:db8::1", "key      2001:db8::/64"}},
		{"garbage hop",
			[]string{"--peer", "10.0.0.5:41000", "-H", "X-Forwarded-For: 198.51.100.7, unknown", "--trusted-proxy", "10.0.0.5", "GET", "/"}, nil,
			[]string{"not an address: the walk stops", "why      malformed-hop: ", "key      10.0.0.5/32"}},
		{"gRPC health",
			[]string{"--peer", "192.0.2.1:1", "POST", "/grpc.health.v1.Health/Check"}, nil,
			[]string{"group    health (route POST /grpc.health.v1.Health/ (the gRPC health service))"}},
		{"dot segments: the canonical form is matched and forwarded",
			[]string{"--peer", "192.0.2.1:1", "--demo", "GET", "/l/%2e%2e/l/./abc"}, nil,
			[]string{"request  GET /l/%2e%2e/l/./abc (host localhost)",
				"forward  GET /l/abc (host localhost): the canonical form", "group    link (route GET /l/{id})"}},
		{"case and trailing slash folded",
			[]string{"--peer", "192.0.2.1:1", "--demo", "GET", "/L/abc/"}, nil,
			[]string{"group    link (route GET /l/{id})", "matched  lower-cased, trailing slash removed: "}},
		{"no folding",
			[]string{"--peer", "192.0.2.1:1", "--demo", "--route-folding=false", "GET", "/L/abc/"}, nil,
			[]string{"group    none: "}},
		{"a method override",
			[]string{"--peer", "192.0.2.1:1", "--demo", "--method-override", "-H", "X-HTTP-Method-Override: get", "POST", "/l/abc"}, nil,
			[]string{"group    link (route GET /l/{id})", "matched  as GET (a method override): "}},
		{"a format suffix, as Rails routes it",
			[]string{"--peer", "192.0.2.1:1", "--demo", "--upstream-profile", "rails", "POST", "/hooks/github.json"}, nil,
			[]string{"group    webhook (route POST /hooks/{name})", "matched  format suffix removed, as Rails routes it: "}},
		{"a front controller, under the generic profile",
			[]string{"--peer", "192.0.2.1:1", "--demo", "GET", "/index.php/l/abc"}, nil,
			[]string{"group    link (route GET /l/{id})", "matched  front controller removed, as a PHP front controller routes it: "}},
		{"a _method parameter in the query",
			[]string{"--peer", "192.0.2.1:1", "--route", "link=DELETE /x/{id}", "--upstream-profile", "express", "POST", "/x/abc?_method=delete"}, nil,
			[]string{"group    link (route DELETE /x/{id})", "matched  as DELETE (a method override): "}},
		{"a path parameter is refused",
			[]string{"--peer", "192.0.2.1:1", "--demo", "GET", "/l;x/abc"}, nil,
			[]string{"refused  400 Bad Request: the path holds a ';' or %3B"}},
		{"a path parameter let through, under the servlet profile",
			[]string{"--peer", "192.0.2.1:1", "--demo", "--allow-spellings", "path_parameter", "--upstream-profile", "servlet", "GET", "/x/..;/l/abc"}, nil,
			[]string{"group    link (route GET /l/{id})", "matched  path parameters removed, as servlet containers map it: "}},
		{"a listed Host is refused",
			[]string{"--peer", "192.0.2.1:1", "--demo", "-H", "Host: x,example.com", "GET", "/l/abc"}, nil,
			[]string{"refused  400 Bad Request: the Host is not one host name"}},
		{"a lower-case method is refused, as the server refuses it",
			[]string{"--peer", "192.0.2.1:1", "--demo", "get", "/l/abc"}, nil,
			[]string{"refused  400 Bad Request: the method is not an upper-case token"}},
		{"an encoded slash is refused",
			[]string{"--peer", "192.0.2.1:1", "--demo", "GET", "/l%2Fabc"}, nil,
			[]string{"refused  400 Bad Request: the path holds an encoded slash"}},
		{"an encoded slash decoded",
			[]string{"--peer", "192.0.2.1:1", "--demo", "--escaped-slashes", "decode", "GET", "/l%2Fabc"}, nil,
			[]string{"forward  GET /l/abc (host localhost)", "group    link (route GET /l/{id})"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runArgs(t, tt.env, append([]string{"explain"}, tt.args...)...)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestExplainDefaultPeer: without --peer, explain resolves the request as
// from a documentation address, and says that it chose it.
func TestExplainDefaultPeer(t *testing.T) {
	out, err := runArgs(t, nil, "explain", "--route", "link=GET /s/{token}", "GET", "/s/abc")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"peer     192.0.2.1:40000 (default; --peer sets it) -> 192.0.2.1, not a trusted proxy\n",
		"key      192.0.2.1/32\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain without --peer printed\n%s\nwant it to hold %q", out, want)
		}
	}
	out, err = runArgs(t, nil, "explain", "--peer", "198.51.100.7:1", "--route", "link=GET /s/{token}", "GET", "/s/abc")
	if err != nil || strings.Contains(out, "default") {
		t.Errorf("explain --peer printed\n%s(err %v), want no word of a default", out, err)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad flag", []string{"--listne", ":80"}, "admit: unknown flag --listne; admit --help lists the flags"},
		{"validate bad flag", []string{"validate", "--rate-limit", "5"}, "admit validate: unknown flag --rate-limit; admit validate --help lists the flags"},
		{"explain bad flag", []string{"explain", "-X", "GET", "/"}, "admit explain: unknown flag -X; admit explain --help lists the flags"},
		{"schema bad flag", []string{"schema", "--table", "t"}, "admit schema: unknown flag --table; admit schema --help lists the flags"},
		{"schema flag without value", []string{"schema", "--store-table"}, "admit schema: --store-table needs a value (--store-table TABLE)"},
		{"explain without path", []string{"explain", "--peer", "192.0.2.1:1", "GET"}, "admit explain: want METHOD PATH"},
		{"explain bad header", []string{"explain", "--peer", "192.0.2.1:1", "-H", "X-Forwarded-For 1.2.3.4", "GET", "/"}, `admit explain: -H "X-Forwarded-For 1.2.3.4": want "Name: value"`},
		{"explain /0", []string{"explain", "--peer", "192.0.2.1:1", "--trusted-proxy", "0.0.0.0/0", "GET", "/"}, `admit: --trusted-proxy "0.0.0.0/0": `},
		{"explain relative path", []string{"explain", "--peer", "192.0.2.1:1", "GET", "l/x"}, `admit explain: path "l/x": want a path`},
		{"store fail error", []string{"--store", "redis://127.0.0.1:1", "--store-fail", "error"}, `admit: --store-fail "error": error hands the decision back to the front`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runArgs(t, nil, tt.args...)
			var uerr usageError
			if !errors.As(err, &uerr) {
				t.Fatalf("got %v, want a usage error", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

func TestRunStartupErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		want  string
		usage bool // exits 2: the configuration is at fault
	}{
		{"missing certificate", []string{"--demo", "--tls-cert", "testdata/none.pem", "--tls-key", "testdata/none.pem"}, `admit: --tls-cert "testdata/none.pem", --tls-key "testdata/none.pem": `, true},
		{"bad table", []string{"--demo", "--store", "postgres://127.0.0.1:1/x", "--store-table", "Bad-Name"}, `admit: --store-table "Bad-Name": `, true},
		{"gRPC health path claimed", []string{"--demo", "--route", "link=GET /grpc.health.v1.Health/Check"}, `admit: --route "link=GET /grpc.health.v1.Health/Check": claims the path of the gRPC health service`, true},
		{"gRPC health path claimed with a host", []string{"--demo", "--route", "link=example.com/grpc.health.v1.Health/{m}"}, `admit: --route "link=example.com/grpc.health.v1.Health/{m}": claims`, true},
		{"conflict with the gRPC health service", []string{"--demo", "--route", "link=/{svc}/Check"}, `admit: route "health=POST /grpc.health.v1.Health/"`, true},
		{"a budget the store refuses", []string{"--demo", "--config", "testdata/short-window.yaml", "--store", "redis://127.0.0.1:1"},
			`admit: --config "testdata/short-window.yaml": line 2: budgets.fast: limit 5 per window 500µs cannot be decided on the shared store: window 500µs, the Redis store needs at least 1ms`, true},
		{"listen taken", []string{"--demo", "--listen", "127.0.0.1:0", "--metrics-listen", "256.0.0.1:1"}, "admit: --metrics-listen: ", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runArgs(t, nil, tt.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v, want an error starting %q", err, tt.want)
			}
			var uerr usageError
			if errors.As(err, &uerr) != tt.usage {
				t.Errorf("usage error: got %v, want %v (exit 2 for the configuration's faults)", errors.As(err, &uerr), tt.usage)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out, err := runArgs(t, nil, "--version")
	if err != nil || !strings.HasPrefix(out, "admit ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: got %v and %q, want the module version and the Go version", err, out)
	}
}

func TestValidate(t *testing.T) {
	out, err := runArgs(t, nil, "validate", "--demo")
	if err != nil {
		t.Fatalf("validate --demo: %v", err)
	}
	for _, want := range []string{`route  link=GET /l/{id}: link (token-bucket rate 1/s, burst 20, key peer)`,
		"group  webhook: {algorithm: token-bucket, rate: 50, burst: 500, shared_rate: 50, shared_burst: 500, key: peer, per_client: 16, inflight: 64, max_clients: 16384, read_timeout: 10s, max_body_bytes: 1048576, min_body_rate: 500, body_rate_grace: 5s, hold_timeout: 30s, charge_on_failure: true}\n",
		"group  link: {algorithm: token-bucket, rate: 1, burst: 20, shared_rate: 1, shared_burst: 20, key: peer, per_client: 2, inflight: 4, max_clients: 16384, read_timeout: 0, max_body_bytes: 65536, min_body_rate: 100, body_rate_grace: 10s, hold_timeout: 10s, charge_on_failure: false}\n",
		"ok\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate --demo lacks %q:\n%s", want, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string // "" when valid
	}{
		{[]string{"--upstream", "http://app"}, "admit validate: no route is configured"},
		{[]string{"--upstream", "http://app", "--allow-no-routes"}, ""},
		{[]string{"--demo", "--route", "admin=GET /admin"}, `admit: --route "admin=GET /admin": unknown group "admin"`},
		{[]string{"--demo", "--store", "postgres://127.0.0.1:1/x", "--store-table", "Bad-Name"}, `admit: --store-table "Bad-Name"`},
	} {
		_, err := runArgs(t, nil, append([]string{"validate"}, tc.args...)...)
		var uerr usageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("validate %q: got %v, want it valid", tc.args, err)
		case tc.want != "" && (err == nil || !errors.As(err, &uerr) || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("validate %q: got %v, want a usage error starting %q", tc.args, err, tc.want)
		}
	}
}

// TestValidateSpellings: validate prints each value as the config file
// spells it, so that a line can be read against the file, or copied into it.
func TestValidateSpellings(t *testing.T) {
	path := writeConfig(t, `budgets:
  fw: {algorithm: fixed-window, limit: 100, window: 1h}
  open: {like: health, rate: .inf, shared_rate: .inf}
  api: {rate: 0.5, burst: 3, read_timeout: 0, max_body_bytes: 0, min_body_rate: 100, body_rate_grace: 10s, hold_timeout: 1m30s, charge_on_failure: true, key: "header:X-Api-Key", key_authenticated: true, on_missing: reject}
  wide: {like: link, ipv4_prefix: 24, ipv6_prefix: 48}
  slow: {rate: 600r/h, burst: 20, shared_rate: 100/m, refusal_status: 503, ratelimit_headers: x-ratelimit, ratelimit_headers_admitted: true}
  shaped: {like: link, refusal_type: problem, refusal_body: "{group} is busy, retry in {retry_after} s", refusal_problem_type: "https://example.com/busy", refusal_headers: {cache-control: no-store}}
routes:
  - {group: slow, pattern: "GET /s"}
  - {group: fw, pattern: "GET /a"}
  - {group: [wide, api], pattern: "GET /b/{x}", cost: 2}
  - {group: open, pattern: "GET /c"}
  - {group: shaped, pattern: "GET /d"}
`)
	out, err := runArgs(t, nil, "validate", "--config", path)
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	for _, want := range []string{
		"route  fw=GET /a: fw (fixed-window limit 100 per 1h, key peer)\n",
		"route  slow=GET /s: slow (token-bucket rate 10/m = 0.1667/s, burst 20, key peer)\n",
		"group  slow: {algorithm: token-bucket, rate: 10/m, burst: 20, shared_rate: 100/m, shared_burst: 20, key: peer, per_client: 32, inflight: 256, max_clients: 16384, read_timeout: 0, max_body_bytes: 65536, min_body_rate: 100, body_rate_grace: 10s, hold_timeout: 10s, charge_on_failure: false, refusal_status: 503, ratelimit_headers: x-ratelimit, ratelimit_headers_admitted: true}\n",
		"route  wide,api=GET /b/{x}: wide (token-bucket rate 1/s, burst 20, key peer), then api (token-bucket rate 0.5/s, burst 3, key header:X-Api-Key), cost 2\n",
		"route  open=GET /c: open (token-bucket without a rate limit, key peer)\n",
		`charge_on_failure: false, refusal_type: problem, refusal_body: "{group} is busy, retry in {retry_after} s", refusal_problem_type: https://example.com/busy, refusal_headers: {Cache-Control: "no-store"}}` + "\n",
		"group  fw: {algorithm: fixed-window, limit: 100, window: 1h, shared_burst: 100, key: peer, per_client: 32, inflight: 256, max_clients: 16384, read_timeout: 0, max_body_bytes: 65536, min_body_rate: 100, body_rate_grace: 10s, hold_timeout: 10s, charge_on_failure: false}\n",
		"group  open: {like: health, algorithm: token-bucket, rate: .inf, burst: 20, shared_rate: .inf, shared_burst: 20, key: peer, per_client: 32, inflight: 256, max_clients: 16384, read_timeout: 0, max_body_bytes: 65536, min_body_rate: 100, body_rate_grace: 10s, hold_timeout: 5s, charge_on_failure: false}\n",
		"group  api: {algorithm: token-bucket, rate: 0.5, burst: 3, shared_rate: 0.5, shared_burst: 3, key: header:X-Api-Key, key_authenticated: true, on_missing: reject, per_client: 256, inflight: 256, max_clients: 16384, read_timeout: 0, max_body_bytes: 0, min_body_rate: 100, body_rate_grace: 10s, hold_timeout: 1m30s, charge_on_failure: true}\n",
		"group  wide: {like: link, algorithm: token-bucket, rate: 1, burst: 20, shared_rate: 1, shared_burst: 20, key: peer, ipv4_prefix: 24, ipv6_prefix: 48, per_client: 32, inflight: 256, max_clients: 16384, read_timeout: 0, max_body_bytes: 65536, min_body_rate: 100, body_rate_grace: 10s, hold_timeout: 10s, charge_on_failure: false}\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate lacks %q:\n%s", want, out)
		}
	}
}

// TestValidateWithoutUpstream: validate checks a file on its own, since it
// connects to nothing, and says what it therefore leaves unchecked.
func TestValidateWithoutUpstream(t *testing.T) {
	path := writeConfig(t, "routes:\n  - {group: link, pattern: \"GET /l/{id}\"}\n")
	tests := []struct {
		name string
		args []string
		tail string // the output's last lines
	}{
		{"no upstream", nil,
			"unchecked  upstream: none is given, and the server needs --upstream (ADMIT_UPSTREAM) unless --demo\nok\n"},
		{"an upstream", []string{"--upstream", "http://admit:s3cret@app:3000"},
			"unchecked  upstream http://admit:xxxxx@app:3000: whether it answers (validate connects to nothing)\nok\n"},
		{"the demo upstream", []string{"--demo"}, "group  webhook: "},
		{"redis", []string{"--store", "redis://:s3cret@cache:6379"},
			"unchecked  upstream: none is given, and the server needs --upstream (ADMIT_UPSTREAM) unless --demo\n" +
				"unchecked  store redis://:xxxxx@cache:6379: whether it answers (validate connects to nothing)\nok\n"},
		{"postgres", []string{"--upstream", "http://app", "--store", "postgres://db/admit", "--store-table", "quota.admit"},
			"unchecked  upstream http://app: whether it answers (validate connects to nothing)\n" +
				"unchecked  store postgres://db/admit: whether it answers, and whether table quota.admit exists or admit may create it (validate connects to nothing)\nok\n"},
		{"postgres without migration", []string{"--upstream", "http://app", "--store", "postgres://db/admit", "--store-migrate=false"},
			"unchecked  store postgres://db/admit: whether it answers, and whether table admit_quota exists (validate connects to nothing)\nok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runArgs(t, nil, append([]string{"validate", "--config", path}, tt.args...)...)
			if err != nil {
				t.Fatalf("got %v, want it valid:\n%s", err, out)
			}
			if tt.name == "the demo upstream" {
				if strings.Contains(out, "unchecked  upstream") || !strings.Contains(out, tt.tail) {
					t.Errorf("got\n%s\nwant no line about the upstream", out)
				}
				return
			}
			if !strings.HasSuffix(out, tt.tail) {
				t.Errorf("got\n%s\nwant it to end\n%s", out, tt.tail)
			}
		})
	}
	_, err := runArgs(t, nil, "validate")
	if want := "admit validate: no route is configured, so admit would limit nothing: add routes, or pass --allow-no-routes"; fmt.Sprint(err) != want {
		t.Errorf("validate without routes: got %v, want %q", err, want)
	}
}

func TestSchema(t *testing.T) {
	out, err := runArgs(t, nil, "schema", "--store-table", "limits.quota")
	if err != nil || !strings.Contains(out, "CREATE TABLE IF NOT EXISTS \"limits\".\"quota\"") {
		t.Errorf("schema: got %v and %q, want the SQL for limits.quota", err, out)
	}
	const header = "-- The table and index of the admit PostgreSQL quota store, for the table\n" +
		"-- quota.my_q. Safe to run again: each statement creates only what is missing.\n" +
		"CREATE TABLE IF NOT EXISTS \"quota\".\"my_q\" (\n"
	if out, err := runArgs(t, nil, "schema", "--store-table", "quota.my_q"); err != nil || !strings.HasPrefix(out, header) {
		t.Errorf("schema for quota.my_q: got %v and\n%s\nwant it to start\n%s", err, out, header)
	}
	if _, err := runArgs(t, nil, "schema", "--store-table", "Bad-Name"); err == nil || !strings.Contains(err.Error(), `--store-table "Bad-Name"`) {
		t.Errorf("schema with a bad table: got %v, want an error naming it", err)
	}
}

func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"explain", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := runArgs(t, nil, args...)
			if err != nil || !strings.HasPrefix(out, "Usage: admit") {
				t.Errorf("got %v and %q, want no error and the usage", err, out)
			}
		})
	}
}

// TestStoreDown checks that a store that does not answer at startup does
// not stop the server, and that its failure policy then decides.
func TestStoreDown(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"redis, fail closed", []string{"--store", "redis://127.0.0.1:1"}, 503},
		{"redis, fail open", []string{"--store", "redis://127.0.0.1:1", "--store-fail", "open"}, 200},
		{"postgres, fail closed", []string{"--store", "postgres://postgres@127.0.0.1:1/test?connect_timeout=1"}, 503},
		{"postgres without migration, fail open", []string{"--store", "postgres://postgres@127.0.0.1:1/test?connect_timeout=1", "--store-migrate=false", "--store-fail", "open"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, append(appRoutes(upstreamApp(t).URL), tt.args...)...)
			r.answers(t, 1, tt.want, "GET", "/l/abc", "")
			if got := r.count(t, "link", "store_error"); got != 1 {
				t.Errorf("store_error: got %d, want 1", got)
			}
			r.answers(t, 1, 200, "GET", "/account", "")
		})
	}
}
