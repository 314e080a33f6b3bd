package yamlmap

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// root decodes one YAML document and returns its top node.
func root(t testing.TB, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatalf("decode %q: %v", src, err)
	}
	return doc.Content[0]
}

// pairs walks n and returns what each saw, "k=v" in order, with the
// walk's error.
func pairs(n *yaml.Node, known func(*yaml.Node) bool) ([]string, error) {
	var got []string
	err := Walk(n, known, func(k, v *yaml.Node) error {
		got = append(got, k.Value+"="+Resolve(v).Value)
		return nil
	})
	return got, err
}

// takes is a reader that takes the keys a and b.
func takes(k *yaml.Node) bool { return k.Value == "a" || k.Value == "b" }

func TestWalk(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		path  []string // the mapping walked: keys from the top; none: the top
		known func(*yaml.Node) bool
		want  string // the pairs seen, joined with spaces
		err   string // the *Error's text; "" for none
	}{
		{"pairs in order", "b: 2\na: 1\n", nil, takes, "b=2 a=1", ""},
		{"empty flow mapping", "{}", nil, takes, "", ""},
		{"every key without known", "x: 1\ny: 2\n", nil, nil, "x=1 y=2", ""},
		{"alias of a mapping", "a: &m {b: 1}\nb: *m\n", []string{"b"}, takes, "b=1", ""},
		{"a value through an alias", "a: &v 7\nb: *v\n", nil, takes, "a=7 b=7", ""},
		{"unknown key", "a: 1\nc: 2\n", nil, takes, "a=1", "yamlmap: line 2: unknown key \"c\""},
		{"repeated key", "a: 1\nb: 2\na: 3\n", nil, takes, "a=1 b=2", "yamlmap: line 3: key \"a\" given twice (first on line 1)"},
		{"repeated key without known", "x: 1\nx: 2\n", nil, nil, "x=1", "yamlmap: line 2: key \"x\" given twice (first on line 1)"},
		{"quoted and plain keys are one key", "a: 1\n\"a\": 2\n", nil, takes, "a=1", "yamlmap: line 2: key \"a\" given twice (first on line 1)"},
		{"unknown before repeated", "c: 1\nc: 2\n", nil, takes, "", "yamlmap: line 1: unknown key \"c\""},
		{"a scalar", "a\n", nil, takes, "", "yamlmap: line 1: not a mapping"},
		{"a list", "- a: 1\n", nil, takes, "", "yamlmap: line 1: not a mapping"},
		{"null", "a: ~\n", []string{"a"}, takes, "", "yamlmap: line 1: not a mapping"},
		{"alias of a scalar", "a: &s x\nb: *s\n", []string{"b"}, takes, "", "yamlmap: line 2: not a mapping"},
		{"alias of a list, at the alias's line", "a: &l [1]\nb: *l\n", []string{"b"}, takes, "", "yamlmap: line 2: not a mapping"},
		{"a key that is a mapping", "? {a: 1}\n: 2\n", nil, takes, "", "yamlmap: line 1: unknown key \"\""},
		{"a key known refuses by its tag", "a: 1\n!!int 2: 3\n", nil,
			func(k *yaml.Node) bool { return k.Tag == "!!str" }, "a=1", "yamlmap: line 2: unknown key \"2\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := root(t, tt.yaml)
			for _, key := range tt.path {
				n = field(t, n, key)
			}
			got, err := pairs(n, tt.known)
			if s := strings.Join(got, " "); s != tt.want {
				t.Errorf("pairs: got %q, want %q", s, tt.want)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("error: got %v, want none", err)
			case tt.err != "" && fmt.Sprint(err) != tt.err:
				t.Errorf("error: got %v, want %s", err, tt.err)
			}
		})
	}
}

// field returns the value of key in mapping n, as given (an alias stays one).
func field(t *testing.T, n *yaml.Node, key string) *yaml.Node {
	t.Helper()
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	t.Fatalf("no key %q", key)
	return nil
}

// TestWalkErrorIsAValue: a problem comes back as a *Error naming the node
// at fault and, for a repeated key, its first place; an error of each comes
// back as each returned it, and stops the walk.
func TestWalkErrorIsAValue(t *testing.T) {
	n := root(t, "a: 1\nb: 2\na: 3\n")
	err := Walk(n, nil, func(*yaml.Node, *yaml.Node) error { return nil })
	e, ok := err.(*Error)
	if !ok || e.Problem != Repeated || e.Node != n.Content[4] || e.First != n.Content[0] {
		t.Fatalf("got %#v, want Repeated at the third key, first at the first", err)
	}

	stop := errors.New("the reader's own")
	calls := 0
	err = Walk(n, nil, func(*yaml.Node, *yaml.Node) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("got %v after %d calls, want the reader's error unchanged after 1", err, calls)
	}
}

func TestResolve(t *testing.T) {
	n := root(t, "a: &x 1\nb: *x\n")
	if got := Resolve(n.Content[3]); got != n.Content[1] {
		t.Errorf("Resolve(alias) = %v, want the anchored node", got)
	}
	if got := Resolve(n.Content[1]); got != n.Content[1] {
		t.Errorf("Resolve(scalar) = %v, want the node itself", got)
	}
}
