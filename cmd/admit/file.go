package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
)

// readFile reads the YAML config file at path: its routes come before those
// of --route, and its budgets set each group's figures field by field onto
// the door's budgets. Errors name the line and the field as the file spells
// them, never a Go type. Unknown and repeated fields are errors, so a typo
// never silently keeps a default.
func (c *config) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		var perr *os.PathError
		if errors.As(err, &perr) {
			return perr.Err // the path is in the message already
		}
		return err
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err == io.EOF {
		return nil // an empty file, or comments only
	} else if err != nil {
		return err // yaml's syntax errors name their line
	}
	if err := dec.Decode(new(yaml.Node)); err != io.EOF {
		return errors.New("more than one YAML document")
	}
	root := doc.Content[0]
	if isNull(root) {
		return nil
	}
	return eachField(root, "", map[string]func(*yaml.Node) error{
		"routes":  c.readRoutes,
		"budgets": c.readBudgets,
	})
}

// readRoutes reads a list of routes, each a group and a pattern.
func (c *config) readRoutes(list *yaml.Node) error {
	if list.Kind != yaml.SequenceNode {
		return at(list, "routes", "want a list of routes, each with a group and a pattern")
	}
	for i, n := range list.Content {
		where := fmt.Sprintf("routes[%d]", i)
		var group, pattern string
		err := eachField(n, where, map[string]func(*yaml.Node) error{
			"group":   scalar(where+".group", func(v string) error { group = v; return nil }),
			"pattern": scalar(where+".pattern", func(v string) error { pattern = v; return nil }),
		})
		switch {
		case err != nil:
			return err
		case group == "" || pattern == "":
			return at(n, where, "want a group and a pattern")
		}
		if err := c.addRoute(admit.Group(group), pattern); err != nil {
			if c.checkGroup(admit.Group(group)) != nil {
				return at(n, where, "%v", err)
			}
			return at(n, fmt.Sprintf("%s %q", where, pattern), "%v", err)
		}
	}
	return nil
}

// readBudgets reads each group's budget fields onto an admit.Budget.
func (c *config) readBudgets(m *yaml.Node) error {
	if m.Kind != yaml.MappingNode {
		return at(m, "budgets", "want a map from group names to their budgets")
	}
	fields := make(map[string]func(*yaml.Node) error)
	for i := 0; i < len(m.Content); i += 2 {
		name := m.Content[i].Value
		fields[name] = func(n *yaml.Node) error {
			if err := c.checkGroup(admit.Group(name)); err != nil {
				return at(m.Content[i], "budgets", "%v", err)
			}
			b, err := readBudget(n, "budgets."+name)
			if err != nil {
				return err
			}
			if c.Budgets == nil {
				c.Budgets = make(map[admit.Group]admit.Budget)
			}
			c.Budgets[admit.Group(name)] = b
			return nil
		}
	}
	return eachField(m, "budgets", fields)
}

// readBudget reads one group's fields. A field left out keeps the group's
// default. In the file, as in nginx, a 0 timeout or body cap means none.
func readBudget(n *yaml.Node, where string) (admit.Budget, error) {
	var b admit.Budget
	if isNull(n) {
		return b, nil
	}
	count := func(name string, dst *int) func(*yaml.Node) error {
		return scalar(where+"."+name, func(v string) (err error) { *dst, err = parseFileCount(v); return err })
	}
	limit := func(name string, dst *rate.Limit) func(*yaml.Node) error {
		return scalar(where+"."+name, func(v string) (err error) { *dst, err = parseFileRate(v); return err })
	}
	timeout := func(name string, dst *time.Duration) func(*yaml.Node) error {
		return scalar(where+"."+name, func(v string) (err error) { *dst, err = parseFileTimeout(v); return err })
	}
	err := eachField(n, where, map[string]func(*yaml.Node) error{
		"rate":         limit("rate", &b.Rate),
		"burst":        count("burst", &b.Burst),
		"shared_rate":  limit("shared_rate", &b.SharedRate),
		"shared_burst": count("shared_burst", &b.SharedBurst),
		"per_client":   count("per_client", &b.PerClient),
		"inflight":     count("inflight", &b.Inflight),
		"max_clients":  count("max_clients", &b.MaxClients),
		"read_timeout": timeout("read_timeout", &b.ReadTimeout),
		"hold_timeout": timeout("hold_timeout", &b.HoldTimeout),
		"max_body_bytes": scalar(where+".max_body_bytes", func(v string) (err error) {
			b.MaxBodyBytes, err = parseFileBytes(v)
			return err
		}),
		"charge_on_failure": scalar(where+".charge_on_failure", func(v string) error {
			on, err := parseBool(v)
			b.Charge = admit.ChargeAlways
			if on {
				b.Charge = admit.ChargeOnFailure
			}
			return err
		}),
	})
	return b, err
}

// eachField walks mapping n, calling the reader of each key; an unknown or
// repeated key is an error naming its line and where names the mapping.
func eachField(n *yaml.Node, where string, readers map[string]func(*yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return at(n, orTop(where), "want a map of fields")
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := dotted(where, k.Value)
		if line, dup := seen[k.Value]; dup {
			return at(k, name, "given twice (first on line %d)", line)
		}
		seen[k.Value] = k.Line
		read, ok := readers[k.Value]
		if !ok {
			return at(k, orTop(where), "unknown field %q (want %s)", k.Value, knownFields(readers))
		}
		if err := read(v); err != nil {
			return err
		}
	}
	return nil
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

func parseFileRate(v string) (rate.Limit, error) {
	var f float64
	if err := yaml.Unmarshal([]byte(v), &f); err != nil {
		return 0, fmt.Errorf("%q is not a number of tokens per second (.inf for no limit)", v)
	}
	switch {
	case math.IsInf(f, 1):
		return rate.Inf, nil
	case f < 0 || math.IsNaN(f):
		return 0, fmt.Errorf("must not be negative, got %v", f)
	case f == 0:
		return 0, errors.New("must be positive (.inf for no limit), got 0")
	}
	return rate.Limit(f), nil
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
