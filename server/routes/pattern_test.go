package routes

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestMayFoldOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"GET /l/{id}", "GET /l/{id}/", true},         // /l/x and /l/x/
		{"GET /l/{id}", "GET /L/{id}", true},          // case
		{"GET /l/{id}", "GET /l/special", true},       // a wildcard meets a literal
		{"GET /l/{id}", "GET /m/{id}", false},         // literals differ
		{"GET /l/{id}", "POST /l/{id}", false},        // methods differ
		{"GET /l/{id}", "HEAD /l/{id}", true},         // GET matches HEAD
		{"GET /l/{id}", "/l/{id}", true},              // no method matches every method
		{"GET /l/{id}", "GET /l/{id}/{more}", false},  // lengths differ, no rest
		{"GET /l/{id}", "GET /l/", true},              // a subtree
		{"GET /l/{id}/{x}", "GET /l/{rest...}", true}, // a rest wildcard
		{"GET a.example/l/{id}", "GET b.example/l/{id}", false},
		{"GET a.example/l/{id}", "GET /l/{id}", true},
		{"GET /", "GET /l/x", true}, // "/" matches every path
	} {
		if got := mayFoldOverlap(parsePattern(tc.a), parsePattern(tc.b)); got != tc.want {
			t.Errorf("mayFoldOverlap(%q, %q): got %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestConflictErrorNamesTheRoute checks that New names the pattern it
// refuses by its index, so that a front can name it in its own words, and
// says whether only folding makes it conflict.
func TestConflictErrorNamesTheRoute(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		fold     bool
		want     ConflictError
	}{
		{[]string{"GET /docs/{p}", "GET /x", "GET /Docs/{p}"}, true, ConflictError{Route: 2, Pattern: "GET /Docs/{p}", Folded: true}},
		{[]string{"GET /docs/{p}", "GET /docs/{q}"}, false, ConflictError{Route: 1, Pattern: "GET /docs/{q}"}},
	} {
		_, err := New(tc.patterns, Matching{Fold: tc.fold})
		var got *ConflictError
		if !errors.As(err, &got) {
			t.Fatalf("%q: got %v, want a *ConflictError", tc.patterns, err)
		}
		if got.Route != tc.want.Route || got.Pattern != tc.want.Pattern || got.Folded != tc.want.Folded || got.Why == "" {
			t.Errorf("%q: got %+v, want %+v with ServeMux's explanation", tc.patterns, *got, tc.want)
		}
	}
	if _, err := New([]string{"GET /docs/{p}", "GET /Docs/{p}"}, Matching{}); err != nil {
		t.Errorf("without folding: got %v, want the patterns apart", err)
	}
}

// TestCheckAndConflict words ServeMux's refusals in the pattern's terms and
// finds the conflicts it would panic on, folded or not.
func TestCheckAndConflict(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"GET /l/{id}", ""},
		{"GET example.com", "no path: want [METHOD ][HOST]/PATH, such as GET /l/{id}"},
		{"GET /l/{id", `segment "{id" has no closing '}': a wildcard is a whole segment, such as {id} or {rest...}`},
		{"GET /l/{a}/{a}", `segment "{a}": another segment has a wildcard of that name`},
		// ServeMux takes these without a method, reading // as a wildcard.
		{"/api//users", "the path has an empty, . or .. segment: requests are cleaned before matching, so it would match none"},
		{"example.com/a/./b", "the path has an empty, . or .. segment: requests are cleaned before matching, so it would match none"},
		{"/a/..", "the path has an empty, . or .. segment: requests are cleaned before matching, so it would match none"},
		{"GET /a//", "the path has an empty, . or .. segment: requests are cleaned before matching, so it would match none"},
		{"/a/", ""},
		{"/a/{$}", ""},
	} {
		err := Check(tc.pattern)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("Check(%q): got %v, want %q", tc.pattern, err, tc.want)
		}
	}
	for _, tc := range []struct {
		earlier, p      string
		exact, folded   bool
		foldedWhyPrefix string
	}{
		{"GET /l/{id}", "GET /l/{x}", true, true, "lower-cased, "},
		{"GET /l/{id}", "GET /L/{id}", false, true, "lower-cased, both are GET /l/{id}"},
		{"GET /l/{id}", "GET /l/special", false, false, ""},
		{"GET a.example/l/{id}", "GET A.EXAMPLE/L/{id}", false, true, "lower-cased, both are"},
	} {
		if _, got := Conflict(tc.earlier, tc.p); got != tc.exact {
			t.Errorf("Conflict(%q, %q): got %v, want %v", tc.earlier, tc.p, got, tc.exact)
		}
		why, got := FoldedConflict(tc.earlier, tc.p)
		if got != tc.folded || !strings.HasPrefix(why, tc.foldedWhyPrefix) {
			t.Errorf("FoldedConflict(%q, %q): got %v, %q; want %v, starting %q", tc.earlier, tc.p, got, why, tc.folded, tc.foldedWhyPrefix)
		}
	}
}

// TestSplit takes patterns apart as ServeMux does.
func TestSplit(t *testing.T) {
	for _, tc := range []struct{ p, method, host, path string }{
		{"GET /l/{id}", "GET", "", "/l/{id}"},
		{"GET\t Example.com/l", "GET", "Example.com", "/l"},
		{"/l/{id}", "", "", "/l/{id}"},
		{"example.com/", "", "example.com", "/"},
		{"GET /a b", "GET", "", "/a b"}, // the method ends at the first space
	} {
		m, h, p := Split(tc.p)
		if m != tc.method || h != tc.host || p != tc.path {
			t.Errorf("Split(%q): got %q %q %q, want %q %q %q", tc.p, m, h, p, tc.method, tc.host, tc.path)
		}
	}
}
