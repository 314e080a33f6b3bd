package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/admitgo/admit"
	"github.com/admitgo/admit/internal/canon"
	"github.com/admitgo/admit/internal/yamlmap"
	"github.com/admitgo/admit/server/routes"
)

// The file's keys that the server's logs and answers also use, for the
// same things.
const (
	FieldRoutes  = "routes"
	fieldBudgets = "budgets"
	FieldGroup   = "group"
	FieldPattern = "pattern"
	FieldEngine  = "http_engine"
	fieldCost    = "cost" // also in the door's refusals of a route
)

// readFile reads the YAML config file at path: its routes come before those
// of --route, and its budgets set each group's figures field by field onto
// the door's budgets. Errors name the line and the field as the file spells
// them, never a Go type. Unknown and repeated fields are errors, so a typo
// never silently keeps a default.
func (c *Config) readFile(path string) error {
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
		return syntaxError(data, err)
	}
	if err := dec.Decode(new(yaml.Node)); err != io.EOF {
		return errors.New("more than one YAML document")
	}
	if err := yamlmap.CheckAliases(&doc); err != nil {
		return aliasError(err)
	}
	root := doc.Content[0]
	if isNull(root) {
		return nil
	}
	// Budgets name the groups routes may join, so they are read first,
	// wherever they stand in the file.
	var routeList, budgets *yaml.Node
	err = eachField(root, "", map[string]func(*yaml.Node) error{
		FieldRoutes:  func(n *yaml.Node) error { routeList = n; return nil },
		fieldBudgets: func(n *yaml.Node) error { budgets = n; return nil },
		"upstream_profile": scalar("upstream_profile", func(v string) error {
			p, err := routes.ParseProfile(v)
			c.fileProfile = &p
			return err
		}),
		"allow_spellings": c.readAllowSpellings,
		fieldUpgrades:     c.readUpgrades,
		"admin_hosts":     c.readAdminHosts,
		FieldEngine: scalar(FieldEngine, func(v string) error {
			e, err := parseEngine(v)
			c.fileEngine = &e
			return err
		}),
	})
	if err == nil && budgets != nil {
		err = c.readBudgets(budgets)
	}
	if err == nil && routeList != nil {
		err = c.readRoutes(routeList)
	}
	return err
}

// syntaxError words yaml's syntax error with the line it is on. yaml names
// the line where the construct around the error began, counted from 0 for
// some errors and from 1 for others, so the line is found again: the first
// whose prefix of the file fails with the same problem.
func syntaxError(data []byte, err error) error {
	problem := strings.TrimPrefix(err.Error(), "yaml: ")
	if n, rest, ok := strings.Cut(strings.TrimPrefix(problem, "line "), ": "); ok && strings.HasPrefix(problem, "line ") && strings.Trim(n, "0123456789") == "" {
		problem = rest
	}
	hint := ""
	switch {
	case strings.Contains(problem, "tab character"):
		hint = "; YAML indents with spaces only"
	case problem == "did not find expected ',' or '}'":
		hint = `; in {...}, quote a value that holds braces, such as pattern: "GET /l/{id}"`
	}
	end := 0
	for line := 1; end < len(data); line++ {
		if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
			end += i + 1
		} else {
			end = len(data)
		}
		err := yaml.NewDecoder(bytes.NewReader(data[:end])).Decode(new(yaml.Node))
		if err != nil && err != io.EOF && strings.HasSuffix(err.Error(), problem) {
			return fmt.Errorf("line %d: not valid YAML: %s%s", line, problem, hint)
		}
	}
	return fmt.Errorf("not valid YAML: %s%s", problem, hint)
}

// aliasError words yamlmap.CheckAliases's refusal as a syntax error is
// worded, in yaml's words for an excessive document.
func aliasError(err error) error {
	e, ok := err.(*yamlmap.Error)
	switch {
	case !ok:
		return err
	case e.Problem == yamlmap.Recursive:
		return fmt.Errorf("line %d: not valid YAML: alias *%s is inside the value it names", e.Node.Line, e.Node.Value)
	}
	return errors.New("not valid YAML: document contains excessive aliasing")
}

// readAllowSpellings reads the classes of spellings to let through: a list
// of class names, or one name.
func (c *Config) readAllowSpellings(n *yaml.Node) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var allow canon.Classes
	for i, item := range items {
		where := "allow_spellings"
		if n.Kind == yaml.SequenceNode {
			where = fmt.Sprintf("allow_spellings[%d]", i)
		}
		err := scalar(where, func(v string) error {
			cl, err := canon.ParseClasses(v) // as the flag reads it: "none", or names separated by commas
			allow |= cl
			return err
		})(item)
		if err != nil {
			return err
		}
	}
	c.fileAllow = &allow
	return nil
}

// readAdminHosts reads the names the metrics listener answers to: a list
// of names, or one string of them as --admin-host takes it.
func (c *Config) readAdminHosts(n *yaml.Node) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	hosts := []string{}
	for i, item := range items {
		where := "admin_hosts"
		if n.Kind == yaml.SequenceNode {
			where = fmt.Sprintf("admin_hosts[%d]", i)
		}
		err := scalar(where, func(v string) error {
			if err := appendHosts(&hosts, v); err != nil {
				return fmt.Errorf("%q: %w", v, err)
			}
			return nil
		})(item)
		if err != nil {
			return err
		}
	}
	c.fileHosts = &hosts
	return nil
}

// readRoutes reads a list of routes, each a group (or a list of groups),
// a pattern and an optional cost.
func (c *Config) readRoutes(list *yaml.Node) error {
	if list.Kind != yaml.SequenceNode {
		return at(list, FieldRoutes, "want a list of routes, each with a group and a pattern")
	}
	for i, n := range list.Content {
		where := fmt.Sprintf("routes[%d]", i)
		r := Route{from: fmt.Sprintf("line %d: %s", n.Line, where), inFile: true}
		err := eachField(n, where, map[string]func(*yaml.Node) error{
			FieldGroup:   func(g *yaml.Node) error { return readGroups(g, where+".group", &r.Groups) },
			FieldPattern: scalar(where+".pattern", func(v string) error { r.Pattern = v; return nil }),
			fieldCost:    scalar(where+".cost", func(v string) (err error) { r.Cost, err = parseFileCount(v); return err }),
			"strict_methods": scalar(where+".strict_methods", func(v string) (err error) {
				r.StrictMethods, err = ParseBool(v)
				return err
			}),
		})
		switch {
		case err != nil:
			return err
		case len(r.Groups) == 0 || r.Pattern == "":
			return at(n, where, "want a group and a pattern")
		}
		if err := c.addRoute(r); err != nil {
			for _, g := range r.Groups {
				if c.checkGroup(g) != nil {
					return at(n, where, "%v", err)
				}
			}
			return at(n, fmt.Sprintf("%s %q", where, r.Pattern), "%v", err)
		}
	}
	return nil
}

// readGroups reads a route's group: one name, or a list of names whose
// limits stack in order.
func readGroups(n *yaml.Node, where string, dst *[]admit.Group) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for i, item := range items {
		at := where
		if n.Kind == yaml.SequenceNode {
			at = fmt.Sprintf("%s[%d]", where, i)
		}
		if err := scalar(at, func(v string) error { *dst = append(*dst, admit.Group(v)); return nil })(item); err != nil {
			return err
		}
	}
	return nil
}

// readBudgets reads each group's budget fields onto an admit.Budget.
func (c *Config) readBudgets(m *yaml.Node) error {
	return walk(m, fieldBudgets, "want a map from group names to their budgets", nil, func(k, n *yaml.Node) error {
		name := k.Value
		if err := checkGroupName(name); err != nil {
			return at(k, fieldBudgets, "%v", err)
		}
		d, err := readBudget(n, "budgets."+name, admit.Group(name), c.getenv)
		if err != nil {
			return err
		}
		if d.exemptFrom != "" {
			if c.ExemptFrom == nil {
				c.ExemptFrom = make(map[admit.Group]string)
			}
			c.ExemptFrom[admit.Group(name)] = d.exemptFrom
		}
		if d.interval > 0 {
			if c.Async == nil {
				c.Async = make(map[admit.Group]time.Duration)
			}
			c.Async[admit.Group(name)] = d.interval
		}
		if c.Budgets == nil {
			c.Budgets, c.Likes = make(map[admit.Group]admit.Budget), make(map[admit.Group]admit.Group)
		}
		c.Budgets[admit.Group(name)] = d.b
		c.Likes[admit.Group(name)] = d.like
		if c.budgetLines == nil {
			c.budgetLines = make(map[admit.Group]int)
		}
		c.budgetLines[admit.Group(name)] = k.Line
		return nil
	})
}

// checkGroupName refuses a group name a metric attribute or a route could
// not carry plainly.
func checkGroupName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("group name %q: want 1 to 64 characters", name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return fmt.Errorf("group name %q: want lowercase letters, digits, - and _", name)
		}
	}
	return nil
}

// defaultSyncInterval is how often a group in the async mode reconciles
// with the store unless it says: the interval of asyncquota's default.
// minSyncInterval and maxSyncInterval bound what it may say: a shorter
// interval would keep a core busy reconciling, and a longer one is also the
// reconcile's deadline, which shutdown may wait for.
const (
	defaultSyncInterval = 100 * time.Millisecond
	minSyncInterval     = 10 * time.Millisecond
	maxSyncInterval     = time.Minute
)
