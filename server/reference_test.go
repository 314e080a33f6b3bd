package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRLSAsReference runs admit rls in reference mode under the name
// ratelimit, and ratelimit validate as admit rls validate.
func TestRLSAsReference(t *testing.T) {
	for _, tc := range []struct{ args, want []string }{
		{nil, []string{"rls", "--env=envoy"}},
		{[]string{"-h"}, []string{"rls", "--env=envoy", "-h"}},
		{[]string{"validate", "--config", "x"}, []string{"rls", "validate", "--env=envoy", "--config", "x"}},
	} {
		if got := AsReference(tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestMainRunsRLS hands admit rls its arguments, and under ratelimit the
// reference's environment, and exits as it ends: 0, or 2 for a refusal.
func TestMainRunsRLS(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config", "edge.yaml")
	os.MkdirAll(filepath.Dir(config), 0o755)
	if err := os.WriteFile(config, []byte("domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := func(string) string { return "" }
	reference := func(k string) string {
		return map[string]string{"RUNTIME_ROOT": dir, "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis:6379"}[k]
	}
	for _, tc := range []struct {
		name   string
		args   []string
		getenv func(string) string
		code   int
		want   string
	}{
		{"validate", []string{"rls", "validate", "--config", config}, none, 0, "edge.k: unit=MINUTE requests_per_unit=2"},
		{"refused", []string{"rls", "validate"}, none, 2, "admit rls: --config is required"},
		{"as ratelimit", AsReference([]string{"validate"}), reference, 0, "ok\n"},
		{"as ratelimit, refused", AsReference([]string{"validate"}), func(k string) string {
			return map[string]string{"REDIS_PERSECOND": "true"}[k] + reference(k)
		}, 2, `REDIS_PERSECOND_SOCKET_TYPE unset: the reference's default "unix"`},
	} {
		var out strings.Builder
		if code := Main(context.Background(), tc.args, tc.getenv, &out, &out); code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", tc.name, code, out.String(), tc.code, tc.want)
		}
	}
}
