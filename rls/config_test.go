package rls_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admitgo/admit/rls"
)

// TestConfigErrors loads files envoyproxy/ratelimit refuses and wants each
// error to name the file, the line and column, and the field.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"no domain", "descriptors: []\n", `f.yaml:1:1: domain: missing or empty`},
		{"unknown key", "domain: d\ndescriptors:\n  - key: a\n    rate_limits: {}\n", `f.yaml:4:5: descriptors[0].rate_limits: unknown key "rate_limits"`},
		{"bad unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n", `f.yaml:5:13: descriptors[0].rate_limit.unit: "fortnight": want second, minute, hour, day, week, month or year`},
		{"no unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      requests_per_unit: 1\n", `f.yaml:5:7: descriptors[0].rate_limit.unit: "": want second`},
		{"unknown is no unit", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: unknown}\n", `descriptors[0].rate_limit.unit: "unknown"`},
		{"unit with unlimited", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, unlimited: true}\n", `f.yaml:4:24: descriptors[0].rate_limit.unit: not with unlimited`},
		{"empty key", "domain: d\ndescriptors:\n  - value: x\n", `f.yaml:3:5: descriptors[0].key: missing or empty`},
		{"duplicate", "domain: d\ndescriptors:\n  - key: a\n  - key: a\n", `f.yaml:4:5: descriptors[1]: duplicate descriptor "d.a"`},
		{"collision", "domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a_b\n", `duplicate descriptor "d.a_b"`},
		{"negative", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -1}\n", `descriptors[0].rate_limit.requests_per_unit: "-1": want a whole number from 0 to 4294967295`},
		{"too big", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 4294967296}\n", `"4294967296": want a whole number`},
		{"fraction", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1.5}\n", `descriptors[0].rate_limit.requests_per_unit: 1.5 is a float`},
		{"quoted number", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: \"5\"}\n", `"5": want a whole number`},
		{"bad bool", "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n", `f.yaml:4:18: descriptors[0].shadow_mode: "maybe": want true or false`},
		{"share threshold", "domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n", `descriptors[0].share_threshold: only for a value that ends in "*", not "a_b"`},
		{"empty replaces", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{}]}\n", `descriptors[0].rate_limit.replaces[0].name: missing or empty`},
		{"self replaces", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, name: x, replaces: [{name: x}]}\n", `"x" is this limit's own name`},
		{"list of strings", "domain: d\ndescriptors:\n  - a\n", `f.yaml:3:5: descriptors: a list holds only mappings here`},
		{"not yaml", "domain: a\ndescriptors:\n  - key: x\n   value: y\n", `rls: f.yaml:2: YAML: did not find expected '-' indicator`},
		{"not yaml, no line", "\tdomain: a\n", `rls: f.yaml: YAML: found character that cannot start any token`},
		{"key twice", "domain: d\ndomain: e\n", `f.yaml:2:1: domain: given twice`},
		{"a key no string", "domain: d\n1: x\n", `f.yaml:2:1: key "1" is not a string`},
		{"an alias of a scalar for a mapping", "domain: d\ndescriptors:\n  - key: &k a\n  - *k\n", `f.yaml:3:10: descriptors: a list holds only mappings here, not "a"`},
		{"a top level no mapping", "- domain: d\n", `f.yaml:1:1: want a mapping, not a list`},
		{"an alias inside its own anchor", "domain: d\ndescriptors: &l\n  - key: a\n    descriptors: *l\n", `rls: f.yaml:4:18: YAML: alias *l is inside the value it names`},
		{"aliases expanding without end", laughs, `rls: f.yaml: YAML: document contains excessive aliasing`},
		{"nested", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit: {unit: minute}\n        descriptors:\n          - key: c\n            rate_limit: {unit: year, requests_per_unit: x}\n", `f.yaml:9:57: descriptors[0].descriptors[0].descriptors[0].rate_limit.requests_per_unit: "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rls.Parse("f.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error holding %q", err, tc.want)
			}
		})
	}
}

// laughs is a file of 3 KB whose aliases stand for 2^31 descriptors:
// each level lists two descriptors whose children are the level below.
var laughs = func() string {
	var b strings.Builder
	b.WriteString("domain: d\ndescriptors:\n  - key: top\n    descriptors: &l0\n      - {key: a}\n      - {key: b}\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "  - key: l%d\n    descriptors: &l%d\n      - {key: a, descriptors: *l%d}\n      - {key: b, descriptors: *l%d}\n", i, i, i-1, i-1)
	}
	return b.String()
}()

// TestConfigAccepts loads what envoyproxy/ratelimit loads, spellings of
// its YAML parser included.
func TestConfigAccepts(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"units in any case", "domain: d\ndescriptors:\n  - {key: a, rate_limit: {unit: SeCoNd, requests_per_unit: 1}}\n  - {key: b, rate_limit: {unit: WEEK, requests_per_unit: 1}}\n"},
		{"yaml 1.1 booleans", "domain: d\ndescriptors:\n  - {key: a, shadow_mode: yes, detailed_metric: On, rate_limit: {unit: second, requests_per_unit: 1}}\n"},
		{"a number as a value", "domain: d\ndescriptors:\n  - {key: a, value: 42, rate_limit: {unit: second, requests_per_unit: 1_000}}\n"},
		{"a key valid elsewhere", "domain: d\nunit: second\ndescriptors:\n  - {key: a, domain: x}\n"},
		{"unlimited with a bad unit", "domain: d\ndescriptors:\n  - {key: a, rate_limit: {unlimited: true, unit: bogus}}\n"},
		{"no descriptors", "domain: d\n"},
		{"zero limit", "domain: d\ndescriptors:\n  - {key: a, rate_limit: {unit: second, requests_per_unit: 0}}\n"},
		{"a descriptor through an anchor", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [&x {key: b}]\n  - key: c\n    descriptors: [*x]\n"},
		{"a rate_limit through an anchor", "domain: d\ndescriptors:\n  - {key: a, rate_limit: &r {unit: second, requests_per_unit: 1}}\n  - {key: b, rate_limit: *r}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rls.Parse("f.yaml", []byte(tc.yaml)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLoadDirectory loads one domain per file, leaves dot files out, and
// refuses a domain two files name, naming the second file.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), "domain: a\n")
	write(t, filepath.Join(dir, "sub", "b.yaml"), "domain: b\n")
	write(t, filepath.Join(dir, ".a.yaml.swp"), "not: yaml: at all")
	cfg, err := rls.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Domains(), ","); got != "a,b" {
		t.Fatalf("domains %q, want a,b", got)
	}
	write(t, filepath.Join(dir, "c.yaml"), "domain: a\n")
	_, err = rls.Load(dir)
	if err == nil || !strings.Contains(err.Error(), `c.yaml:1:9: domain: "a" is already configured by another file`) {
		t.Fatalf("got %v, want the duplicate domain named in c.yaml", err)
	}
	if _, err := rls.Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("got %v, want an error naming the missing path", err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
