// Package yamlmap walks the fields of a YAML mapping for admit's two
// readers of YAML files: the proxy's configuration file and the
// envoyproxy/ratelimit configuration that admit rls reads. It finds what is
// wrong with a mapping as such (a value that is no mapping, a key the
// reader does not take, a key given twice) and reports it as an [Error]
// value, which each reader words in its own file's terms; what a field's
// value must be stays with the reader. [CheckAliases] refuses, before any
// walk, the aliases a reader could not follow to an end.
package yamlmap

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// A Problem is what is wrong with a mapping.
type Problem uint8

const (
	// NotMapping: the node is not a mapping, nor an alias of one.
	NotMapping Problem = iota + 1
	// Unknown: a key the reader does not take.
	Unknown
	// Repeated: a key given a second time in one mapping.
	Repeated
	// Recursive: an alias inside the value its anchor names, which a walk
	// through it would follow for ever (see [CheckAliases]).
	Recursive
	// Excessive: aliases that make the document stand for far more nodes
	// than it holds (see [CheckAliases]).
	Excessive
)

// An Error is a mapping's problem and the node it is at.
type Error struct {
	Problem Problem
	// Node is the node at fault: the value that is no mapping, as given
	// (an alias stays one: a reader may name the alias's place or, through
	// [Resolve], its anchor's), the key that is unknown or repeated, the
	// recursive alias, or the top node of an excessive document.
	Node *yaml.Node
	// First is, for Repeated, the key where it was first given.
	First *yaml.Node
}

func (e *Error) Error() string {
	switch e.Problem {
	case NotMapping:
		return fmt.Sprintf("yamlmap: line %d: not a mapping", e.Node.Line)
	case Unknown:
		return fmt.Sprintf("yamlmap: line %d: unknown key %q", e.Node.Line, e.Node.Value)
	case Repeated:
		return fmt.Sprintf("yamlmap: line %d: key %q given twice (first on line %d)", e.Node.Line, e.Node.Value, e.First.Line)
	case Recursive:
		return fmt.Sprintf("yamlmap: line %d: alias *%s is inside the value it names", e.Node.Line, e.Node.Value)
	case Excessive:
		return "yamlmap: document contains excessive aliasing"
	}
	return fmt.Sprintf("yamlmap: line %d: problem %d", e.Node.Line, e.Problem)
}

// Walk calls each with every key and value of mapping n, in the file's
// order; n may be an alias of a mapping. known says whether the reader
// takes a key (nil: it takes every key); keys compare by their text. Walk
// stops at the first problem, which it returns as a *Error, unwrapped, and
// at the first error of each, which it returns unchanged, so that a caller
// tells its own errors from the mapping's by their type. A key's problem
// is found before each sees it: a reader never reads a field it would then
// refuse.
func Walk(n *yaml.Node, known func(key *yaml.Node) bool, each func(key, value *yaml.Node) error) error {
	m := Resolve(n)
	if m.Kind != yaml.MappingNode {
		return &Error{Problem: NotMapping, Node: n}
	}
	seen := make(map[string]*yaml.Node, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if known != nil && !known(k) {
			return &Error{Problem: Unknown, Node: k}
		}
		if first, dup := seen[k.Value]; dup {
			return &Error{Problem: Repeated, Node: k, First: first}
		}
		seen[k.Value] = k
		if err := each(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Resolve returns the node an alias stands for, or n when it is none.
func Resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
