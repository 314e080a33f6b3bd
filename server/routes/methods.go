package routes

import (
	"net/http"
	"slices"
)

// Apps do not all dispatch by method. A Django function view without a
// method decorator, a Flask view, a PHP script or an Express app.all run
// for any method, and a @csrf_exempt Django view takes every one: a limit
// on GET /l/{id} that held only GET and HEAD let every other method reach
// the same view unlimited. So a request is also matched under every method
// the routes name, and held to each route it matches so, stacked as folded
// spellings are (the safe direction), unless a route naming the request's
// method matches its path as narrowly or more: then the app has a handler
// for that method there. A route naming it on a wider path (POST
// /{rest...}) says nothing of how the app dispatches it on this one. A route marked strict (the app
// runs its handler for its own method alone, as Rails routes and Spring's
// @GetMapping do) is left out of this.

// unnamed appends to dst the routes the spellings of vs match under each
// method the routes name besides method, but those that a route of
// dst[start:] found under method answers for: one naming method, on the
// same path or a narrower one.
func (t *Table) unnamed(host string, vs []variant, method string, start int, dst []Match) []Match {
	for _, other := range t.named {
		// A GET route on the path matched HEAD already.
		if other == method || method == http.MethodHead && other == http.MethodGet {
			continue
		}
		end := len(dst)
		dst = t.lookUp(host, vs, spelling{method: other, unnamed: method}, -1, dst)
		kept := dst[:end]
		for _, m := range dst[end:] {
			if !slices.ContainsFunc(dst[start:end], func(d Match) bool { return t.answers(d, method, m.Route) }) {
				kept = append(kept, m)
			}
		}
		dst = kept
	}
	return dst
}

// answers reports whether d, a match under the request's method, is a
// route naming method on the path of route or a narrower one.
func (t *Table) answers(d Match, method string, route int) bool {
	return d.sp.unnamed == "" && d.sp.method == method && t.names(d.Route, method) && t.within(d.Route, route)
}

// names reports whether route's pattern names method, GET naming HEAD too
// as in ServeMux; a pattern without a method names none.
func (t *Table) names(route int, method string) bool {
	m := t.methods[route]
	return m != "" && (m == method || m == http.MethodGet && method == http.MethodHead)
}

// within reports whether every path route a matches, route b matches too,
// hosts aside from b's wildcards' names: a is as specific as b or more, so
// an app that dispatches a's method at all has a's handler for it there.
func (t *Table) within(a, b int) bool {
	pa, pb := t.parsed[a], t.parsed[b]
	switch {
	case pb.host != "" && pa.host != pb.host,
		len(pa.segs) < len(pb.segs),
		!pb.rest && (pa.rest || len(pa.segs) != len(pb.segs)):
		return false
	}
	for i, s := range pb.segs {
		if s != "{}" && pa.segs[i] != s {
			return false
		}
	}
	return true
}

// shadowed reports, conservatively, whether a route not strict, naming
// another method on a path narrower than route i's, or overlapping it,
// might match a path that route i matches: a request route i matches
// under its own method must then be looked up under the other methods too.
func (t *Table) shadowed(i int) bool {
	for j := range t.parsed {
		if j == i || t.strict[j] || t.methods[j] == "" || t.methods[j] == t.methods[i] || t.within(i, j) {
			continue
		}
		a, b := t.parsed[i], t.parsed[j]
		a.method, b.method = "", ""
		if mayFoldOverlap(a, b) {
			return true
		}
	}
	return false
}
