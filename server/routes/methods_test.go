package routes

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestUnnamedMethods holds a request whose method no route names on its
// path to every route on that path, as an app whose views run for any
// method (a Django function view, a Flask view without methods) serves it
// from the limited view; a route marked strict is left out.
func TestUnnamedMethods(t *testing.T) {
	patterns := []string{"GET /l/{id}", "GET /two/{x}", "DELETE /two/{x}", "GET /s/{x}", "POST /hooks/{name}"}
	strict := []bool{false, false, false, true, false}
	for _, fold := range []bool{true, false} {
		table, err := New(patterns, Matching{Fold: fold, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			method, target string
			want           []int
			unnamed        bool // matched only because no route names the method
		}{
			{"GET", "/l/abc", []int{0}, false},
			{"HEAD", "/l/abc", []int{0}, false},
			{"POST", "/l/abc", []int{0}, true},
			{"PUT", "/l/abc", []int{0}, true},
			{"OPTIONS", "/l/abc", []int{0}, true},
			{"PATCH", "/l/abc", []int{0}, true},
			{"DELETE", "/l/abc", []int{0}, true},
			{"FOO", "/l/abc", []int{0}, true},
			{"GET", "/two/abc", []int{1}, false},
			{"DELETE", "/two/abc", []int{2}, false},
			{"POST", "/two/abc", []int{1, 2}, true},
			{"OPTIONS", "/two/abc", []int{1, 2}, true},
			{"GET", "/s/abc", []int{3}, false},
			{"POST", "/s/abc", nil, false}, // strict: the app runs it for GET alone
			{"GET", "/hooks/github", []int{4}, true},
			{"HEAD", "/hooks/github", []int{4}, true},
			{"POST", "/other", nil, false},
			{"GET", "/other", nil, false},
		} {
			u, _ := url.ParseRequestURI(tc.target)
			r := &http.Request{Method: tc.method, URL: u, RequestURI: tc.target, Host: "example.com"}
			matched := table.matchAll(r, nil, nil)
			var got []int
			for _, m := range matched {
				got = append(got, m.Route)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("fold %v: %s %s: routes %v, want %v", fold, tc.method, tc.target, got, tc.want)
				continue
			}
			for _, m := range matched {
				if says := strings.Contains(m.How(), "no route names "+tc.method); says != tc.unnamed {
					t.Errorf("fold %v: %s %s: route %d matched %q, want the unnamed method said: %v", fold, tc.method, tc.target, m.Route, m.How(), tc.unnamed)
				}
			}
		}
	}
}

// TestUnnamedMethodsBesideACatchAll: a route without a method names none,
// so a request it catches is held to the routes on its path too; a
// catch-all would otherwise take every method but GET past GET /l/{id}.
func TestUnnamedMethodsBesideACatchAll(t *testing.T) {
	table, err := New([]string{"/", "GET /l/{id}", "/x/{id}"}, Matching{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, target string
		want           []int
	}{
		{"GET", "/l/abc", []int{1}},
		{"POST", "/l/abc", []int{0, 1}},
		{"POST", "/other", []int{0}},
		{"POST", "/x/abc", []int{2}},
		{"GET", "/x/abc", []int{2}},
	} {
		u, _ := url.ParseRequestURI(tc.target)
		r := &http.Request{Method: tc.method, URL: u, RequestURI: tc.target, Host: "example.com"}
		var got []int
		for _, m := range table.matchAll(r, nil, nil) {
			got = append(got, m.Route)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: routes %v, want %v", tc.method, tc.target, got, tc.want)
		}
	}
}

// TestUnnamedMethodsBesideAWiderRoute: a route naming the method on a
// wider path (POST /{rest...}) does not say how the app dispatches the
// method on this one, so the request is held to the routes on its own path
// too; a route naming it on the same path, or a narrower one, does.
func TestUnnamedMethodsBesideAWiderRoute(t *testing.T) {
	table, err := New([]string{"POST /{rest...}", "GET /l/{id}", "GET /p/{id}", "POST /p/{x}", "POST /q/special", "GET /q/{id}"}, Matching{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, target string
		want           []int
	}{
		{"GET", "/l/abc", []int{1}},
		{"POST", "/l/abc", []int{0, 1}},
		{"POST", "/other", []int{0}},
		{"POST", "/p/abc", []int{3}},
		{"GET", "/p/abc", []int{2}},
		{"POST", "/q/special", []int{4}}, // a POST handler as narrow as the GET one
		{"POST", "/q/abc", []int{0, 5}},
	} {
		u, _ := url.ParseRequestURI(tc.target)
		r := &http.Request{Method: tc.method, URL: u, RequestURI: tc.target, Host: "example.com"}
		var got []int
		for _, m := range table.matchAll(r, nil, nil) {
			got = append(got, m.Route)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: routes %v, want %v", tc.method, tc.target, got, tc.want)
		}
	}
}
