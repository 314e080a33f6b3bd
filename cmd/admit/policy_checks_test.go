package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// parseFile parses a config file of yaml with extra flags, and returns the
// error without the part that names the file.
func parseFile(t *testing.T, yaml string, extra ...string) (config, string) {
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
