package main

import (
	"bytes"
	"context"
	"errors"
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

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad flag", []string{"--listne", ":80"}, "admit: flag provided but not defined: -listne"},
		{"explain without peer", []string{"explain", "GET", "/"}, "admit explain: --peer is required"},
		{"explain without path", []string{"explain", "--peer", "192.0.2.1:1", "GET"}, "admit explain: want METHOD PATH"},
		{"explain bad header", []string{"explain", "--peer", "192.0.2.1:1", "-H", "X-Forwarded-For 1.2.3.4", "GET", "/"}, `admit explain: -H "X-Forwarded-For 1.2.3.4": want "Name: value"`},
		{"explain /0", []string{"explain", "--peer", "192.0.2.1:1", "--trusted-proxy", "0.0.0.0/0", "GET", "/"}, `admit: --trusted-proxy "0.0.0.0/0": `},
		{"explain relative path", []string{"explain", "--peer", "192.0.2.1:1", "GET", "l/x"}, `admit explain: path "l/x": want a path`},
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
		"group  webhook: token-bucket rate 50/s, burst 500", "hold_timeout 30s, charge on-failure", "ok\n"} {
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

func TestSchema(t *testing.T) {
	out, err := runArgs(t, nil, "schema", "--store-table", "limits.quota")
	if err != nil || !strings.Contains(out, "CREATE TABLE IF NOT EXISTS \"limits\".\"quota\"") {
		t.Errorf("schema: got %v and %q, want the SQL for limits.quota", err, out)
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
