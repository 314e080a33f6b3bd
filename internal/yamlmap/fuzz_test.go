package yamlmap

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzWalk walks every node of any YAML document as a mapping of a reader
// that takes keys without an "x": it must never panic, each must see only
// keys the reader takes, each once, and a walk without error must have
// seen every pair; a problem must name a node, and be the right one. A
// document CheckAliases passes must expand to a bounded count of nodes.
func FuzzWalk(f *testing.F) {
	for _, seed := range []string{
		"a: 1\nb: 2\n",                   // a plain mapping
		"a: 1\na: 2\n",                   // a key twice
		"x: 1\n",                         // a key the reader does not take
		"a: &m {b: 1}\nc: *m\n",          // an alias of a mapping
		"a: &s 1\nc: *s\n",               // an alias of a scalar
		"? [a, b]\n: 1\n? {c: 1}\n: 2\n", // keys that are a list and a mapping
		"<<: {a: 1}\nb: 2\n",             // a merge key, which is a key like any other here
		"- a: 1\n- b\n",                  // a list of a mapping and a scalar
		"a: !!binary aGk=\n1: 2\n~: 3\n", // tags and keys that are no strings
		"{a: 1, \"a\": 2}",               // one key quoted and plain
		"a: &r\n  b: *r\n",               // an alias inside its own anchor
		"",                               // nothing
	} {
		f.Add(seed)
	}
	known := func(k *yaml.Node) bool { return !strings.Contains(k.Value, "x") }
	f.Fuzz(func(t *testing.T, src string) {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(src), &doc) != nil {
			return
		}
		checkAliases(t, &doc)
		// Each node is walked once, as written: a recursive alias would
		// otherwise lead round for ever.
		seen := map[*yaml.Node]bool{}
		var visit func(n *yaml.Node)
		visit = func(n *yaml.Node) {
			if seen[n] {
				return
			}
			seen[n] = true
			check(t, n, known)
			for _, c := range n.Content {
				visit(c)
			}
		}
		visit(&doc)
	})
}

// check walks n and holds the walk to what Walk promises.
func check(t *testing.T, n *yaml.Node, known func(*yaml.Node) bool) {
	t.Helper()
	given := map[string]bool{}
	pairs := 0
	err := Walk(n, known, func(k, v *yaml.Node) error {
		if !known(k) {
			t.Fatalf("each saw key %q, which the reader does not take", k.Value)
		}
		if given[k.Value] {
			t.Fatalf("each saw key %q twice", k.Value)
		}
		if v == nil {
			t.Fatalf("key %q has no value", k.Value)
		}
		given[k.Value] = true
		pairs++
		return nil
	})
	m := Resolve(n)
	if err == nil {
		if m.Kind != yaml.MappingNode || pairs != len(m.Content)/2 {
			t.Fatalf("walked %d pairs of a %v node holding %d, without an error", pairs, m.Kind, len(m.Content))
		}
		return
	}
	e, ok := err.(*Error)
	if !ok || e.Node == nil {
		t.Fatalf("got %#v, want a *Error naming a node", err)
	}
	switch e.Problem {
	case NotMapping:
		if m.Kind == yaml.MappingNode || e.Node != n {
			t.Fatalf("NotMapping for a %v node", m.Kind)
		}
	case Unknown:
		if known(e.Node) {
			t.Fatalf("Unknown for key %q, which the reader takes", e.Node.Value)
		}
	case Repeated:
		if e.First == nil || e.First == e.Node || e.First.Value != e.Node.Value || !given[e.Node.Value] {
			t.Fatalf("Repeated for key %q, first %v", e.Node.Value, e.First)
		}
	default:
		t.Fatalf("problem %d", e.Problem)
	}
	_ = e.Error()
}

// checkAliases holds CheckAliases to its promise: a recursive alias is
// named at an alias, and a document it passes expands, alias by alias, to
// at most 100 times its nodes (or 1,000).
func checkAliases(t *testing.T, doc *yaml.Node) {
	t.Helper()
	err := CheckAliases(doc)
	if err != nil {
		e, ok := err.(*Error)
		switch {
		case !ok || e.Node == nil:
			t.Fatalf("got %#v, want a *Error naming a node", err)
		case e.Problem == Recursive && e.Node.Kind != yaml.AliasNode:
			t.Fatalf("Recursive at a %v node", e.Node.Kind)
		case e.Problem != Recursive && e.Problem != Excessive:
			t.Fatalf("problem %d", e.Problem)
		}
		return
	}
	bound := max(100*written(doc), 1000)
	count := 0
	var expand func(n *yaml.Node)
	expand = func(n *yaml.Node) {
		if count++; count > bound {
			t.Fatalf("CheckAliases passed a document that expands past %d nodes", bound)
		}
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			expand(n.Alias)
		}
		for _, c := range n.Content {
			expand(c)
		}
	}
	expand(doc)
}
