package routes

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// valuePatterns have wildcards at every place ServeMux allows one: after
// literals, in a row, before a trailing slash or {$}, as a rest, under a
// host.
var valuePatterns = []string{
	"GET /l/{id}",
	"/a/{x}/b/{y}",
	"/f/{rest...}",
	"/t/{id}/",
	"example.com/h/{id}",
	"/m/{a}/{b...}",
	"/x/{id}/{$}",
	"/{first}/z",
}

// muxValues is what ServeMux hands the handler of pattern for r, by the
// pattern's wildcard names, and whether the pattern matched r at all.
func muxValues(pattern string, r *http.Request) ([]string, bool) {
	names := wildcardNames(pattern)
	var values []string
	mux := http.NewServeMux()
	mux.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) {
		values = make([]string, len(names))
		for i, n := range names {
			values[i] = r.PathValue(n)
		}
	})
	mux.ServeHTTP(httptest.NewRecorder(), r)
	return values, values != nil
}

func wildcardNames(pattern string) []string {
	var names []string
	for _, w := range wildcards(pattern) {
		names = append(names, w.name)
	}
	return names
}

// spellingRequest is a GET of the escaped path of a spelling.
func spellingRequest(path string) *http.Request {
	r := &http.Request{Method: "GET", Host: "example.com", URL: &url.URL{Path: path}, RequestURI: path}
	if strings.IndexByte(path, '%') >= 0 {
		r.URL.Path, _ = url.PathUnescape(path)
		r.URL.RawPath = path
	}
	return r
}

// checkPathValues checks, for every pattern, that a table hands over the
// values ServeMux would for the request with target as it is, for a
// spelling with its trailing slash toggled the values ServeMux would for
// that path, and, for a lower-cased spelling, the values of the folded
// pattern on the folded path in the case the request sent them.
func checkPathValues(t *testing.T, target string) {
	u, err := url.ParseRequestURI(target)
	if err != nil || !strings.HasPrefix(target, "/") {
		return
	}
	for _, p := range valuePatterns {
		table, err := New([]string{p}, Matching{Fold: true})
		if err != nil {
			t.Fatal(err)
		}
		r := &http.Request{Method: "GET", URL: u, Host: "example.com", RequestURI: target, Header: http.Header{}}
		matched, err := table.Match(nil, r, nil, nil)
		if err != nil {
			continue
		}
		names := wildcardNames(p)
		for _, m := range matched {
			got := table.PathValues(m, names)
			if m.How() == "" {
				want, ok := muxValues(p, r)
				if !ok {
					t.Fatalf("%s: matched %q, ServeMux did not", p, target)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s on %q: values %q, ServeMux hands %q", p, target, got, want)
				}
				continue
			}
			if !m.sp.lower {
				// A toggled slash alone: what ServeMux hands the pattern's
				// handler for the path with its slash toggled.
				want, ok := muxValues(p, spellingRequest(m.sp.path))
				if !ok {
					t.Fatalf("%s: spelling %q of %q matched, ServeMux did not", p, m.sp.path, target)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s on %q (%s): values %q, ServeMux hands %q", p, target, m.How(), got, want)
				}
				continue
			}
			_, folded := patternForms(p)
			want, ok := muxValues(folded, spellingRequest(m.sp.path))
			if !ok {
				t.Fatalf("%s: folded spelling %q of %q matched, ServeMux did not", p, m.sp.path, target)
			}
			for i := range got {
				if !strings.EqualFold(got[i], want[i]) {
					t.Errorf("%s on %q (%s): values %q, ServeMux hands %q", p, target, m.How(), got, want)
				}
			}
		}
	}
}

// TestPathValuesAsServeMux checks the values read by position against
// ServeMux's own on paths of every shape the patterns match: escaped
// slashes and percents, case, empty rests, trailing slashes.
func TestPathValuesAsServeMux(t *testing.T) {
	segments := []string{"a", "Ab", "x%2Fy", "%25", "%C3%A9", "b", "z", ""}
	heads := []string{"/l/", "/a/", "/f/", "/t/", "/h/", "/m/", "/x/", "/"}
	matches := 0
	for _, h := range heads {
		for _, s1 := range segments {
			for _, s2 := range append(segments, "b/c") {
				for _, tail := range []string{"", "/", "/z", "/b/q"} {
					target := h + s1
					if s2 != "" {
						target += "/" + s2
					}
					checkPathValues(t, target+tail)
					matches++
				}
			}
		}
	}
	if matches == 0 {
		t.Fatal("no paths checked")
	}
}

// FuzzPathValues is TestPathValuesAsServeMux on any path.
func FuzzPathValues(f *testing.F) {
	for _, s := range []string{"/l/x", "/a/1/b/2", "/f/a%2Fb/c", "/t/X/y", "/h/%25", "/m/a/", "/x/y/", "/Q/z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		checkPathValues(t, target)
	})
}
