package yamlmap

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestCheckAliases(t *testing.T) {
	tests := []struct{ name, yaml, err string }{
		{"no alias", "a: {b: [1, 2]}\n", ""},
		{"an anchor used again", "a: &m {b: 1}\nc: *m\nd: [*m, *m]\n", ""},
		{"an alias of an alias's anchor", "a: &x {b: 1}\nc: &y {d: *x}\ne: *y\n", ""},
		{"an alias in its own mapping", "a: &r\n  b: *r\n", "yamlmap: line 2: alias *r is inside the value it names"},
		{"an alias in its own list", "a: &l [1, *l]\n", "yamlmap: line 1: alias *l is inside the value it names"},
		{"an alias deep in its own value", "a: &r\n  b:\n    - c: {d: *r}\n", "yamlmap: line 3: alias *r is inside the value it names"},
		{"an alias of its own anchor's ancestor", "a: &o\n  b: &i\n    c: *o\n", "yamlmap: line 3: alias *o is inside the value it names"},
		{"nine levels of ten", laughs(9, 10), "yamlmap: document contains excessive aliasing"},
		{"a rule shared by 2,000 descriptors", shared(2000), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tt.yaml), &doc); err != nil {
				t.Fatal(err)
			}
			err := CheckAliases(&doc)
			if got := fmt.Sprint(err); (tt.err == "" && err != nil) || (tt.err != "" && got != tt.err) {
				t.Fatalf("got %v, want %q", err, tt.err)
			}
			if err != nil {
				if e, ok := err.(*Error); !ok || e.Node == nil {
					t.Fatalf("got %#v, want a *Error naming a node", err)
				}
			}
		})
	}
}

// laughs is the billion laughs: levels lists, each of width aliases of
// the one before, standing for width^levels nodes in a few hundred bytes.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), width), ", "))
	}
	return b.String()
}

// shared is envoyproxy/ratelimit's file with one rate_limit given once and
// named by n descriptors: aliases of plain use, more than half the nodes.
func shared(n int) string {
	var b strings.Builder
	b.WriteString("domain: d\ndescriptors:\n  - {key: k0, rate_limit: &r {unit: second, requests_per_unit: 1, name: shared}}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {key: k%d, rate_limit: *r}\n", i)
	}
	return b.String()
}
