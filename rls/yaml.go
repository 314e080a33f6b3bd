package rls

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/admitgo/admit/internal/yamlmap"
)

// validKeys are the keys envoyproxy/ratelimit accepts. Like it, a key valid
// anywhere is accepted anywhere and ignored where it means nothing (a
// "unit" beside "domain"), so that every file it loads loads here too.
var validKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true,
	"rate_limit": true, "unit": true, "requests_per_unit": true,
	"unlimited": true, "shadow_mode": true, "quota_mode": true, "name": true,
	"replaces": true, "detailed_metric": true, "value_to_metric": true,
	"share_threshold": true,
}

// ruleKeys are admit's own keys of a rate_limit (see bucket.go). The
// reference knows none of them and refuses every file that holds one, so
// accepting them changes no file it loads; unlike its keys, they are
// refused anywhere but in a rate_limit.
var ruleKeys = map[string]bool{"algorithm": true, "burst": true}

// fileError is a configuration error at a place in a file.
type fileError struct {
	file  string
	line  int
	col   int
	field string // the path of the field, as the file spells it
	msg   string
}

func (e *fileError) Error() string {
	var b strings.Builder
	b.WriteString("rls: ")
	b.WriteString(e.file)
	if e.line > 0 {
		fmt.Fprintf(&b, ":%d", e.line)
	}
	if e.col > 0 {
		fmt.Fprintf(&b, ":%d", e.col)
	}
	if e.field != "" {
		b.WriteString(": ")
		b.WriteString(e.field)
	}
	b.WriteString(": ")
	b.WriteString(e.msg)
	return b.String()
}

// syntaxError is a file's YAML syntax error, its line taken out of the
// parser's words ("yaml: line 2: ..."), which give no column, and YAML
// named, as envoyproxy/ratelimit names it.
func syntaxError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &fileError{file: file, msg: "YAML: " + msg}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if line, err := strconv.Atoi(n); err == nil {
				e.line, e.msg = line, "YAML: "+after
			}
		}
	}
	return e
}

// aliasError words yamlmap.CheckAliases's refusal as a syntax error is
// worded, in yaml's words for an excessive document.
func (r reader) aliasError(err error) error {
	e, ok := err.(*yamlmap.Error)
	switch {
	case !ok:
		return err
	case e.Problem == yamlmap.Recursive:
		return r.errorf(e.Node, "", "YAML: alias *%s is inside the value it names", e.Node.Value)
	}
	return r.errorf(nil, "", "YAML: document contains excessive aliasing")
}

// reader walks one file's YAML nodes, naming each error's place.
type reader struct {
	file string
}

func (r reader) errorf(n *yaml.Node, field, format string, args ...any) error {
	e := &fileError{file: r.file, field: field, msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.line, e.col = n.Line, n.Column
	}
	return e
}

// fields returns a mapping's values by key, refusing what
// envoyproxy/ratelimit refuses: keys it does not know, keys that are not
// strings, values that are not strings, integers, booleans, mappings or
// lists of mappings, and (as its YAML parser does) a key given twice.
func (r reader) fields(n *yaml.Node, field string) (map[string]*yaml.Node, error) {
	return r.fieldsWith(n, field, nil)
}

// fieldsWith is fields accepting the keys of own too.
func (r reader) fieldsWith(n *yaml.Node, field string, own map[string]bool) (map[string]*yaml.Node, error) {
	known := func(k *yaml.Node) bool { return k.Tag == "!!str" && (validKeys[k.Value] || own[k.Value]) }
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	err := yamlmap.Walk(n, known, func(k, v *yaml.Node) error {
		out[k.Value] = v
		return r.leaf(v, join(field, k.Value))
	})
	if err == nil {
		return out, nil
	}
	e, ok := err.(*yamlmap.Error)
	if !ok {
		return nil, err
	}
	k := e.Node
	name := join(field, k.Value)
	switch {
	case e.Problem == yamlmap.NotMapping:
		k = yamlmap.Resolve(k)
		return nil, r.errorf(k, field, "want a mapping, not %s", kindName(k))
	case e.Problem == yamlmap.Repeated:
		return nil, r.errorf(k, name, "given twice")
	case k.Kind != yaml.ScalarNode || k.Tag != "!!str":
		return nil, r.errorf(k, field, "key %q is not a string", k.Value)
	case ruleKeys[k.Value]:
		return nil, r.errorf(k, name, "%q belongs in a rate_limit", k.Value)
	}
	return nil, r.errorf(k, name, "unknown key %q", k.Value)
}

// leaf refuses the value types envoyproxy/ratelimit's key check refuses.
func (r reader) leaf(v *yaml.Node, field string) error {
	v = yamlmap.Resolve(v)
	switch v.Kind {
	case yaml.ScalarNode:
		switch v.Tag {
		case "!!str", "!!int", "!!bool", "!!null":
			return nil
		}
		return r.errorf(v, field, "%s is a %s; want a string, a whole number or a boolean", v.Value, strings.TrimPrefix(v.Tag, "!!"))
	case yaml.SequenceNode:
		for _, e := range v.Content {
			if e = yamlmap.Resolve(e); e.Kind != yaml.MappingNode {
				return r.errorf(e, field, "a list holds only mappings here, not %s", kindName(e))
			}
		}
	}
	return nil
}

// str reads a string field; any scalar reads as written, as
// envoyproxy/ratelimit's YAML parser reads a number into a string.
func (r reader) str(m map[string]*yaml.Node, key, field string) (string, error) {
	v := m[key]
	if v == nil || v.Tag == "!!null" {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", r.errorf(v, join(field, key), "want a string, not %s", kindName(v))
	}
	return v.Value, nil
}

// boolean reads a boolean field, in YAML 1.1's spellings as
// envoyproxy/ratelimit's parser reads them (true, yes, on and their
// opposites, in three cases).
func (r reader) boolean(m map[string]*yaml.Node, key, field string) (bool, error) {
	v := m[key]
	if v == nil || v.Tag == "!!null" {
		return false, nil
	}
	if v.Kind == yaml.ScalarNode && v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		switch v.Value {
		case "true", "True", "TRUE", "yes", "Yes", "YES", "y", "Y", "on", "On", "ON":
			return true, nil
		case "false", "False", "FALSE", "no", "No", "NO", "n", "N", "off", "Off", "OFF":
			return false, nil
		}
	}
	return false, r.errorf(v, join(field, key), "%q: want true or false", v.Value)
}

// uint32Field reads a whole number from 0 to 2^32-1.
func (r reader) uint32Field(m map[string]*yaml.Node, key, field string) (uint32, error) {
	v := m[key]
	if v == nil || v.Tag == "!!null" {
		return 0, nil
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!int" {
		s := strings.ReplaceAll(strings.TrimPrefix(v.Value, "+"), "_", "")
		if n, err := strconv.ParseUint(s, 0, 32); err == nil {
			return uint32(n), nil
		}
	}
	return 0, r.errorf(v, join(field, key), "%q: want a whole number from 0 to 4294967295", v.Value)
}

// list returns a list field's elements, each a mapping (leaf checked).
func (r reader) list(m map[string]*yaml.Node, key, field string) ([]*yaml.Node, error) {
	v := m[key]
	if v == nil || v.Tag == "!!null" {
		return nil, nil
	}
	v = yamlmap.Resolve(v)
	if v.Kind != yaml.SequenceNode {
		return nil, r.errorf(v, join(field, key), "want a list, not %s", kindName(v))
	}
	return v.Content, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// join appends key to a field path.
func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}
