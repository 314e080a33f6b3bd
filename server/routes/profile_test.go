package routes

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/admitgo/admit/internal/canon"
)

func TestVariants(t *testing.T) {
	const all = mapParams | mapFormat | mapFrontController
	pct := canon.Classes(canon.EncodedPercent)
	for _, tc := range []struct {
		path  string
		maps  mapping
		allow canon.Classes
		want  []string
	}{
		{"/l/abc", all, 0, []string{"/l/abc"}},
		{"/l;x/abc", mapParams, 0, []string{"/l;x/abc", "/l/abc"}},
		{"/;x/l/abc", mapParams, 0, []string{"/;x/l/abc", "/l/abc"}},
		{"/x/..;/l/abc", mapParams, 0, []string{"/x/..;/l/abc", "/l/abc"}},
		{"/l/.;/abc", mapParams, 0, []string{"/l/.;/abc", "/l/abc"}},
		{"/l/abc;jsessionid=1", mapParams, 0, []string{"/l/abc;jsessionid=1", "/l/abc"}},
		{"/l%3Bx/abc", mapParams, 0, []string{"/l%3Bx/abc", "/l/abc"}},
		{"/l;x/abc", mapFormat, 0, []string{"/l;x/abc"}},
		{"/hooks/github.json", mapFormat, 0, []string{"/hooks/github.json", "/hooks/github"}},
		{"/l/abc.x.y", mapFormat, 0, []string{"/l/abc.x.y", "/l/abc"}},
		{"/l/abc.json/", mapFormat, 0, []string{"/l/abc.json/", "/l/abc"}},
		{"/v1.2/l/abc", mapFormat, 0, []string{"/v1.2/l/abc"}},
		{"/index.php/l/abc", mapFrontController, 0, []string{"/index.php/l/abc", "/l/abc"}},
		{"/INDEX.PHP/l/abc", mapFrontController, 0, []string{"/INDEX.PHP/l/abc", "/l/abc"}},
		{"/a.php/b.php/l/abc", mapFrontController, 0, []string{"/a.php/b.php/l/abc", "/b.php/l/abc", "/l/abc"}},
		{"/index.php", mapFrontController, 0, []string{"/index.php", "/"}},
		{"/l%252Fabc", all, 0, []string{"/l%252Fabc"}},
		{"/l%252Fabc", all, pct, []string{"/l%252Fabc", "/l/abc"}},
		{"/%256c/abc", all, pct, []string{"/%256c/abc", "/l/abc"}},
		{"/l%253Bx/abc", mapParams, pct, []string{"/l%253Bx/abc", "/l%3Bx/abc", "/l;x/abc", "/l/abc"}},
		// The app resolves no dot segment its own decoding makes.
		{"/l%252F.", 0, pct, []string{"/l%252F.", "/l/", "/l/%252E"}},
		{"/l%252F..", 0, pct, []string{"/l%252F..", "/", "/l/%252E%252E"}},
		{"/l%252F%2525", 0, pct, []string{"/l%252F%2525", "/l/%25"}},
		{"/l/abc%3F/zzz", all, canon.Classes(canon.EncodedDelimiter), []string{"/l/abc%3F/zzz", "/l/abc"}},
		{"/l/abc%23/zzz", all, canon.Classes(canon.EncodedDelimiter), []string{"/l/abc%23/zzz", "/l/abc"}},
	} {
		var got []string
		for _, v := range variants(tc.path, tc.maps, tc.allow, canon.Reject, nil) {
			got = append(got, v.path)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("variants(%q, %b): got %q, want %q", tc.path, tc.maps, got, tc.want)
		}
	}
}

// TestProfileMatching looks spellings up in a table under each profile:
// every profile that claims a mapping limits its spellings, and generic
// limits them all.
func TestProfileMatching(t *testing.T) {
	patterns := []string{"GET /l/{id}", "POST /hooks/github", "DELETE /x/{id}"}
	for _, tc := range []struct {
		method, target string
		overrides      []string
		profiles       []Profile // that limit it; the others do not
		id             string    // the id it is keyed by under generic and keyedUnder
		keyedUnder     Profile
	}{
		{"GET", "/l/abc", nil, profiles[:], "abc", Express},
		{"GET", "/l;x/abc", nil, []Profile{Generic, Servlet}, "abc", Servlet},
		{"GET", "/l/abc;jsessionid=1", nil, profiles[:], "abc", Servlet},
		{"GET", "/l/abc.json", nil, profiles[:], "abc", Rails},
		{"POST", "/hooks/github.json", nil, []Profile{Generic, Rails}, "", 0},
		{"POST", "/hooks/github.JSON", nil, []Profile{Generic, Rails}, "", 0},
		{"GET", "/index.php/l/abc", nil, []Profile{Generic, PHP}, "abc", PHP},
		{"GET", "/L/QQQ", nil, profiles[:], "QQQ", Express},
		{"POST", "/x/abc", []string{"DELETE"}, profiles[:], "", 0},
	} {
		for _, p := range profiles {
			table, err := New(patterns, Matching{Fold: true, Profile: p, Allow: canon.Classes(canon.PathParameter)})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.ParseRequestURI(tc.target)
			r := &http.Request{Method: tc.method, URL: u, RequestURI: tc.target, Host: "example.com"}
			matched := table.matchAll(r, tc.overrides, nil)
			want := slices.Contains(tc.profiles, p)
			if got := len(matched) > 0; got != want {
				t.Errorf("%s %s under %v: limited %v, want %v", tc.method, tc.target, p, got, want)
				continue
			}
			if !want || tc.id == "" {
				continue
			}
			// The id is what the framework reads under the profile that
			// routes it; generic keys by that too.
			if p == Generic || p == tc.keyedUnder {
				if got := table.PathValues(matched[0], []string{"id"})[0]; got != tc.id {
					t.Errorf("%s %s under %v: keyed by id %q, want %q", tc.method, tc.target, p, got, tc.id)
				}
			}
		}
	}
}

// matchBench is a canonical request to a limited route, and the table of
// the demo's routes under the generic profile with folding on, as the
// server starts by default.
func matchBench(t testing.TB) (*Table, *http.Request) {
	t.Helper()
	table, err := New([]string{"POST /hooks/{name}", "GET /l/{id}", "GET /healthz"}, Matching{Fold: true})
	if err != nil {
		t.Fatal(err)
	}
	// A literal route: ServeMux allocates to match a wildcard.
	u, _ := url.ParseRequestURI("/healthz")
	return table, &http.Request{Method: "GET", URL: u, RequestURI: "/healthz", Host: "example.com"}
}

// TestMatchAllocs pins the cost of the strict checks and the generic
// profile on an already canonical request: no allocation.
func TestMatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts; scripts/test runs this without it")
	}
	table, r := matchBench(t)
	var found [MaxSpellings]Match
	if n := testing.AllocsPerRun(100, func() {
		c, _ := canon.Request(r, canon.Options{})
		if len(table.matchAll(c, nil, found[:0])) != 1 {
			t.Fatal("no route matched")
		}
	}); n != 0 {
		t.Errorf("canonicalising and matching a canonical request: got %v allocations, want 0", n)
	}
}

func BenchmarkMatch(b *testing.B) {
	table, r := matchBench(b)
	var found [MaxSpellings]Match
	b.ReportAllocs()
	for b.Loop() {
		c, _ := canon.Request(r, canon.Options{})
		table.matchAll(c, nil, found[:0])
	}
}
