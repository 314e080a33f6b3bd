package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/admitgo/admit/internal/yamlmap"
)

// The config file's fields: walking a mapping (internal/yamlmap's walk,
// in the file's words), reading one value, and errors that name the line
// and the field as the file spells them, and the parsers of its values.

// eachField walks mapping n, calling the reader of each key; an unknown or
// repeated key is an error naming its line and where names the mapping.
func eachField(n *yaml.Node, where string, readers map[string]func(*yaml.Node) error) error {
	return walk(n, where, "want a map of fields", readers, func(k, v *yaml.Node) error { return readers[k.Value](v) })
}

// walk calls each with every key and value of mapping n at where, wording
// the mapping's problems in the file's terms: want says what n should be,
// and readers, when not nil, are the keys it takes.
func walk(n *yaml.Node, where, want string, readers map[string]func(*yaml.Node) error, each func(k, v *yaml.Node) error) error {
	var known func(*yaml.Node) bool
	if readers != nil {
		known = func(k *yaml.Node) bool { _, ok := readers[k.Value]; return ok }
	}
	err := yamlmap.Walk(n, known, each)
	e, ok := err.(*yamlmap.Error)
	if !ok {
		return err
	}
	switch e.Problem {
	case yamlmap.NotMapping:
		return at(e.Node, orTop(where), "%s", want)
	case yamlmap.Repeated:
		return at(e.Node, dotted(where, e.Node.Value), "given twice (first on line %d)", e.First.Line)
	}
	return at(e.Node, orTop(where), "unknown field %q (want %s)", e.Node.Value, knownFields(readers))
}

// scalar returns a reader of a single value at where, which set parses.
func scalar(where string, set func(string) error) func(*yaml.Node) error {
	return func(n *yaml.Node) error {
		if n.Kind != yaml.ScalarNode || isNull(n) {
			return at(n, where, "want a single value")
		}
		if err := set(n.Value); err != nil {
			return at(n, where, "%v", err)
		}
		return nil
	}
}

// at returns an error on n's line about the field at where.
func at(n *yaml.Node, where, format string, args ...any) error {
	return fmt.Errorf("line %d: %s: %s", n.Line, where, fmt.Sprintf(format, args...))
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func dotted(where, name string) string {
	if where == "" {
		return name
	}
	return where + "." + name
}

func orTop(where string) string {
	if where == "" {
		return "the file"
	}
	return where
}

// knownFields lists the fields a mapping takes, for errors.
func knownFields(readers map[string]func(*yaml.Node) error) string {
	names := make([]string, 0, len(readers))
	for name := range readers {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// The parsers of the file's values: a field left out is the default, so a
// value given must mean something.

func parseFileCount(v string) (int, error) {
	n, err := parseCount(v, math.MinInt)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, fmt.Errorf("must be at least 1, got %d", n)
	}
	return n, nil
}

// parseFileTimeout reads a duration such as "10s"; 0 means none.
func parseFileTimeout(v string) (time.Duration, error) {
	if v == "0" {
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (such as \"10s\"; 0 for none)", v)
	case d < 0:
		return 0, fmt.Errorf("must not be negative, got %v", d)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// parseFileBytes reads a size in bytes; 0 means no cap.
func parseFileBytes(v string) (int64, error) {
	n, err := parseCount(v, math.MinInt)
	switch {
	case err != nil:
		return 0, err
	case n < 0:
		return 0, fmt.Errorf("must not be negative, got %d", n)
	case n == 0:
		return -1, nil
	}
	return int64(n), nil
}
