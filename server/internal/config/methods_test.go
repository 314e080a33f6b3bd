package config

import (
	"slices"
	"testing"
)

// TestMethodsOption reads --methods and ADMIT_METHODS, and refuses TRACE,
// CONNECT and what is not an upper-case token in the option's own words.
func TestMethodsOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"default", nil, nil, []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}},
		{"flag", []string{"--methods", "GET, HEAD POST"}, nil, []string{"GET", "HEAD", "POST"}},
		{"env", nil, map[string]string{"ADMIT_METHODS": "GET,PROPFIND,GET"}, []string{"GET", "PROPFIND"}},
	} {
		c, err := parse(t, tc.args, tc.env)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(c.Methods, tc.want) {
			t.Errorf("%s: methods %q, want %q", tc.name, c.Methods, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--methods", "GET,TRACE"}, `admit: --methods "GET,TRACE": TRACE is never forwarded: TRACE echoes the request back, with its cookies, and CONNECT opens a tunnel`},
		{[]string{"--methods", "CONNECT"}, `admit: --methods "CONNECT": CONNECT is never forwarded: TRACE echoes the request back, with its cookies, and CONNECT opens a tunnel`},
		{[]string{"--methods", "GET,post"}, `admit: --methods "GET,post": "post" is not a method: want upper-case tokens such as GET,POST`},
		{[]string{"--methods", "GET,P(ST"}, `admit: --methods "GET,P(ST": "P(ST" is not a method: want upper-case tokens such as GET,POST`},
		{[]string{"--methods", ", "}, `admit: --methods ", ": want at least one method, such as GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS`},
	} {
		_, err := parse(t, tc.args, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got error %v, want %s", tc.args, err, tc.want)
		}
	}
}

// TestStrictMethodsRoute reads a route's strict_methods from the file, and
// hands it to the route table.
func TestStrictMethodsRoute(t *testing.T) {
	path := writeConfig(t, "routes:\n  - {group: link, pattern: \"GET /l/{id}\", strict_methods: true}\n  - {group: link, pattern: \"GET /s/{id}\"}\n")
	c, err := parse(t, []string{"--config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Routes) != 2 || !c.Routes[0].StrictMethods || c.Routes[1].StrictMethods {
		t.Fatalf("routes %+v, want the first strict", c.Routes)
	}
	if m := c.matching(c.Routes); !slices.Equal(m.Strict, []bool{true, false}) {
		t.Errorf("the table's strict routes %v, want [true false]", m.Strict)
	}
	path = writeConfig(t, "routes:\n  - {group: link, pattern: \"GET /l/{id}\", strict_methods: maybe}\n")
	if _, err := parse(t, []string{"--config", path}, nil); err == nil {
		t.Error("strict_methods: maybe was accepted")
	}
}
