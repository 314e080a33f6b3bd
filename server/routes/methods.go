package routes

import "net/http"

// Apps do not all dispatch by method. A Django function view without a
// method decorator, a Flask view, a PHP script or an Express app.all run
// for any method, and a @csrf_exempt Django view takes every one: a limit
// on GET /l/{id} that held only GET and HEAD let every other method reach
// the same view unlimited. So a request under a method that no route
// matched on its path names is also matched under every method the routes
// name, and held to every route that matches it so, stacked as folded
// spellings are: the safe direction. A route marked strict (the app runs
// its handler for its own method alone, as Rails routes and Spring's
// @GetMapping do) is left out of this.

// unnamed appends to dst, past start, the routes the spellings of vs
// match under each method the routes name, when none of dst[start:], the
// routes found under method, names method.
func (t *Table) unnamed(host string, vs []variant, method string, start int, dst []Match) []Match {
	for _, m := range dst[start:] {
		if m.sp.unnamed == "" && m.sp.method == method && t.names(m.Route, method) {
			return dst
		}
	}
	for _, other := range t.named {
		// A GET route on the path matched HEAD already.
		if other == method || method == http.MethodHead && other == http.MethodGet {
			continue
		}
		dst = t.lookUp(host, vs, spelling{method: other, unnamed: method}, -1, dst)
	}
	return dst
}

// names reports whether route's pattern names method, GET naming HEAD too
// as in ServeMux; a pattern without a method names none.
func (t *Table) names(route int, method string) bool {
	m := t.methods[route]
	return m != "" && (m == method || m == http.MethodGet && method == http.MethodHead)
}
