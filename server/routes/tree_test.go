package routes

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// treePatterns are patterns of every shape ServeMux takes: with and
// without a method (HEAD is matched by GET) and a host, literal segments
// (escaped too), {name} and {name...} wildcards, {$}, trailing slashes,
// and patterns that overlap so that precedence decides.
var treePatterns = []string{
	"GET /l/{id}",
	"/l/special",
	"POST /l/{id}",
	"/a/{x}/b/{y}",
	"/a/{x}/b/c",
	"/f/{rest...}",
	"/f/x/{rest...}",
	"/t/",
	"/t/{id}/",
	"example.com/h/{id}",
	"/h/{id}",
	"GET example.com/",
	"/m/{a}/{b...}",
	"/x/{id}/{$}",
	"/{first}/z",
	"/e%41/x",
	"/s%2Fa/{id}",
	"HEAD /only-head",
	"/",
	"/{$}",
	"DELETE /d/{id...}",
}

// mark is the handler an oracle ServeMux registers for pattern i.
type mark int

func (mark) ServeHTTP(http.ResponseWriter, *http.Request) {}

// trees builds a tree and a ServeMux of the patterns that some selects
// (bit i: treePatterns[i]) and of extra, each pattern that Check and
// ServeMux accept beside the ones before it, as New builds a table's.
func trees(some uint32, extra string) (*tree, *http.ServeMux) {
	tr, mux := new(tree), http.NewServeMux()
	for i, p := range append(treePatterns[:len(treePatterns):len(treePatterns)], extra) {
		if (i == len(treePatterns) || some&(1<<i) != 0) && Check(p) == nil && register(mux, p, mark(i)) == nil {
			tr.add(p, i)
		}
	}
	return tr, mux
}

// muxRoute is the pattern ServeMux's Handler serves a request with, or -1
// for none (a redirect, a 404 or a 405).
func muxRoute(mux *http.ServeMux, method, host, escaped string) (int, bool) {
	unescaped, err := url.PathUnescape(escaped)
	if err != nil {
		return 0, false
	}
	u := &url.URL{Path: unescaped}
	if unescaped != escaped {
		u.RawPath = escaped
	}
	h, _ := mux.Handler(&http.Request{Method: method, Host: host, URL: u, RequestURI: escaped})
	if m, ok := h.(mark); ok {
		return int(m), true
	}
	return -1, true
}

// checkTree holds the tree of the patterns some selects, and extra, to
// ServeMux for one request.
func checkTree(t *testing.T, some uint32, extra, method, host, path string) {
	t.Helper()
	if !strings.HasPrefix(path, "/") || method == "" || method == "CONNECT" {
		return // what canon refuses before any look-up
	}
	tr, mux := trees(some, extra)
	want, ok := muxRoute(mux, method, host, path)
	if !ok {
		return
	}
	if got := tr.find(host, method, muxPath(path)); got != want {
		t.Errorf("patterns %#x and %q, %s %s%s: tree finds %d, ServeMux %d", some, extra, method, host, path, got, want)
	}
}

// TestTreeAsServeMux looks up paths of every shape the patterns take, and
// their neighbours (a slash more or less, dot segments, doubled slashes,
// escapes, case), under several methods and hosts, in every table of all
// the patterns but one, and of all of them.
func TestTreeAsServeMux(t *testing.T) {
	paths := []string{
		"/", "/l/x", "/l/special", "/l/Special", "/l/", "/l", "/l/x/", "/l/%78", "/l/a%2Fb",
		"/a/1/b/2", "/a/1/b/c", "/a/1/b/", "/a//b/c", "/f", "/f/", "/f/x", "/f/x/", "/f/x/y/z",
		"/t", "/t/", "/t/1", "/t/1/", "/t/1/2", "/h/1", "/h/1/", "/m/a", "/m/a/", "/m/a/b/c",
		"/x/1", "/x/1/", "/x/1/2", "/q/z", "/q/z/", "/eA/x", "/e%41/x", "/s%2Fa/1", "/s/a/1",
		"/only-head", "/d/1/2", "/d/", "/./l/x", "/l/./x", "/l/../l/x", "/l/x/..", "//l/x",
	}
	all := uint32(1)<<len(treePatterns) - 1
	for _, some := range []uint32{all, all &^ (1 << 18), all &^ (1 << 19), 0b101} { // 18, 19: "/", "/{$}"
		for i := -1; i < len(treePatterns); i++ {
			set := some
			if i >= 0 {
				set &^= 1 << i
			}
			for _, method := range []string{"GET", "HEAD", "POST", "DELETE", "PUT"} {
				for _, host := range []string{"", "example.com", "example.com:8080", "other.org", "[::1]:80"} {
					for _, p := range paths {
						checkTree(t, set, "", method, host, p)
					}
				}
			}
		}
	}
}

// FuzzTree is TestTreeAsServeMux for any table of the patterns and one
// pattern more, of any shape, and any request.
func FuzzTree(f *testing.F) {
	f.Add(uint32(1<<len(treePatterns)-1), "", "GET", "example.com", "/l/x")
	f.Add(uint32(0b100000), "/f/{a}/", "HEAD", "", "/f/x/")
	f.Add(uint32(0b11110000), "POST /a/%2f/{x...}", "POST", "example.com:80", "/a/%2F/b/c")
	f.Add(uint32(0), "/api//users", "GET", "", "/api/v1/users")
	f.Add(uint32(1), "example.com/{$}", "HEAD", "EXAMPLE.com", "/")
	f.Fuzz(func(t *testing.T, some uint32, extra, method, host, path string) {
		checkTree(t, some, extra, method, host, path)
	})
}

// TestTreeRandomTables holds the tree to ServeMux for random tables of
// patterns built from every part a pattern has (methods, hosts, literal,
// escaped, wildcard, rest, {$} and trailing-slash segments, and the empty,
// "." and ".." segments Check refuses) and random requests, from a fixed
// seed.
func TestTreeRandomTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	methods := []string{"", "", "GET ", "HEAD ", "POST "}
	hosts := []string{"", "", "example.com", "[::1]"}
	segs := []string{"a", "b", "A", "{x}", "{y}", "%61", "%2F", "", ".", "..", "a.b", "b...}"}
	ends := []string{"", "", "/", "/{$}", "/{r...}"}
	pathSegs := []string{"a", "b", "A", "x", "%61", "%2F", "%2f", "", ".", ".."}
	reqHosts := []string{"", "example.com", "example.com:80", "[::1]:80", "other"}
	for range 3000 {
		var patterns []string
		for range 1 + rng.IntN(5) {
			p := pick(methods) + pick(hosts)
			for range rng.IntN(4) {
				p += "/" + pick(segs)
			}
			if p += pick(ends); !strings.Contains(p, "/") {
				p += "/"
			}
			patterns = append(patterns, p)
		}
		tr, mux := new(tree), http.NewServeMux()
		for i, p := range patterns {
			if Check(p) == nil && register(mux, p, mark(i)) == nil {
				tr.add(p, i)
			}
		}
		for range 30 {
			path := ""
			for range 1 + rng.IntN(4) {
				path += "/" + pick(pathSegs)
			}
			if rng.IntN(3) == 0 {
				path += "/"
			}
			method, host := pick([]string{"GET", "HEAD", "POST", "PUT"}), pick(reqHosts)
			want, ok := muxRoute(mux, method, host, path)
			if !ok {
				continue
			}
			if got := tr.find(host, method, muxPath(path)); got != want {
				t.Fatalf("patterns %q, %s %s%s: tree finds %d, ServeMux %d", patterns, method, host, path, got, want)
			}
		}
	}
}
