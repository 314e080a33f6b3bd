package config

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The file's keys of a group's refusal answer beside refusal_status.
const (
	fieldRefusalBody        = "refusal_body"
	fieldRefusalType        = "refusal_type"
	fieldRefusalProblemType = "refusal_problem_type"
	fieldRefusalHeaders     = "refusal_headers"
)

// refusalTypes are refusal_type's values and the media types they stand
// for, in the order the file's error lists them.
var refusalTypes = []struct{ word, media string }{
	{"text", "text/plain; charset=utf-8"},
	{"html", "text/html; charset=utf-8"},
	{"problem", "application/problem+json"},
}

func readRefusalType(d *budgetDraft, v string) error {
	for _, t := range refusalTypes {
		if t.word == v {
			d.b.RefusalType = t.media
			return nil
		}
	}
	return fmt.Errorf("%q: want text, html or problem", v)
}

func showRefusalType(v budgetView) (any, bool) {
	for _, t := range refusalTypes {
		if t.media == v.b.RefusalType {
			return t.word, true
		}
	}
	return nil, false
}

// readRefusalHeaders reads refusal_headers, a map of header names to
// single values; the door holds the names to its rule.
func readRefusalHeaders(d *budgetDraft, where string) func(*yaml.Node) error {
	return func(n *yaml.Node) error {
		if d.b.RefusalHeaders == nil {
			d.b.RefusalHeaders = http.Header{}
		}
		return walk(n, where, "want a map of header names to values", nil, func(k, v *yaml.Node) error {
			return scalar(dotted(where, k.Value), func(s string) error {
				d.b.RefusalHeaders.Add(k.Value, s)
				return nil
			})(v)
		})
	}
}

// shownText is a free text field as the file would write it: quoted, so
// that its spaces, braces and commas stay inside it.
type shownText string

func (t shownText) String() string { return strconv.Quote(string(t)) }

// shownHeaders is refusal_headers as the file would write it.
type shownHeaders http.Header

func (h shownHeaders) String() string {
	var f []string
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[name] {
			f = append(f, name+": "+strconv.Quote(v))
		}
	}
	return "{" + strings.Join(f, ", ") + "}"
}
