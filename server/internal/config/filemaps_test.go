package config

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/admitgo/admit"
)

// TestFileMappings: every mapping of the file is walked by one rule, each
// in the file's words: a mapping may be given by an alias of an anchor, a
// key given twice is refused wherever it is (refusal_headers' names
// included), and a value that is no mapping says what the field wants.
func TestFileMappings(t *testing.T) {
	tests := []struct{ name, yaml, err string }{
		{"budgets through an anchor", "budgets:\n  api: &b {like: link, rate: 1, burst: 2}\n  web: *b\n", ""},
		{"refusal_headers through an anchor", "budgets:\n  link: {refusal_headers: &h {Cache-Control: no-store}}\n  webhook: {refusal_headers: *h}\n", ""},
		{"a header given twice", "budgets:\n  link:\n    refusal_headers: {Link: </a>, Link: </b>}\n",
			"line 3: budgets.link.refusal_headers.Link: given twice (first on line 3)"},
		{"a group given twice", "budgets:\n  link: {}\n  link: {}\n", "line 3: budgets.link: given twice (first on line 2)"},
		{"a field given twice", "routes: []\nroutes: []\n", "line 2: routes: given twice (first on line 1)"},
		{"the file no mapping", "- a\n", "line 1: the file: want a map of fields"},
		{"budgets no mapping", "budgets: [link]\n", "line 1: budgets: want a map from group names to their budgets"},
		{"a budget no mapping", "budgets:\n  link: 5\n", "line 2: budgets.link: want a map of fields"},
		{"a budget an alias of a scalar", "budgets:\n  link: {refusal_body: &s busy}\n  webhook: *s\n", "line 3: budgets.webhook: want a map of fields"},
		{"refusal_headers no mapping", "budgets:\n  link: {refusal_headers: [a]}\n", "line 2: budgets.link.refusal_headers: want a map of header names to values"},
		{"a route no mapping", "routes: [link]\n", "line 1: routes[0]: want a map of fields"},
		{"an alias inside its own anchor", "budgets:\n  link: &b\n    refusal_headers: *b\n", "line 3: not valid YAML: alias *b is inside the value it names"},
		{"an unknown field of a route", "routes:\n  - {group: link, pattern: GET /, costs: 2}\n",
			`line 2: routes[0]: unknown field "costs" (want cost, group, pattern, strict_methods)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.yaml)
			_, err := parse(t, []string{"--config", path}, nil)
			want := "<nil>"
			if tt.err != "" {
				want = fmt.Sprintf("admit: --config %q: %s", path, tt.err)
			}
			if got := fmt.Sprint(err); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}

	path := writeConfig(t, "budgets:\n  link: &b {rate: 1, burst: 2, refusal_headers: {Cache-Control: no-store}}\n  webhook: *b\n")
	c, err := parse(t, []string{"--config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := admit.Budget{Rate: 1, Burst: 2, RefusalHeaders: http.Header{"Cache-Control": {"no-store"}}}
	if got := c.Budgets[admit.GroupWebhook]; !reflect.DeepEqual(got, want) {
		t.Errorf("the alias's budget: got %+v, want %+v", got, want)
	}
}
