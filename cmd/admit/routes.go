package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// routeTable finds the routes a canonical request is limited by. It uses
// ServeMux's own matching and precedence, and, since upstream routers
// commonly fold case and ignore a trailing slash (Express does both by
// default), it also looks the request up with its path lower-cased and with
// a trailing slash added or removed, so that a spelling the upstream routes
// to a limited handler is limited too. Over-limiting is the safe direction
// when routers disagree.
type routeTable struct {
	routes []route
	exact  *http.ServeMux // the patterns as written, hosts lower-cased
	folded *http.ServeMux // the patterns with their literal path lower-cased; nil without folding
	// foldedSame is set when every pattern is lower-case already, so that a
	// path without upper case needs no second look-up.
	foldedSame bool
}

// routeMark is the handler a table registers for route i; a look-up finds
// it to learn which route matched.
type routeMark int

func (routeMark) ServeHTTP(http.ResponseWriter, *http.Request) {}

// newRouteTable registers routes, checking each against ServeMux's pattern
// syntax and the routes before it. With fold, routes that only folding
// makes conflict are refused too, naming both.
func newRouteTable(routes []route, fold bool) (*routeTable, error) {
	t := &routeTable{routes: routes, exact: http.NewServeMux(), foldedSame: true}
	if fold {
		t.folded = http.NewServeMux()
	}
	for i, r := range routes {
		exact, folded := patternForms(r.Pattern)
		if err := register(t.exact, exact, routeMark(i)); err != nil {
			return nil, fmt.Errorf("admit: route %s: %s", r, conflict(err))
		}
		if t.folded == nil {
			continue
		}
		if folded != exact {
			t.foldedSame = false
		}
		if err := register(t.folded, folded, routeMark(i)); err != nil {
			return nil, fmt.Errorf("admit: route %s conflicts with an earlier route once case is folded, as upstreams that ignore case route them (%s); give them one group or set --route-folding=false", r, conflict(err))
		}
	}
	return t, nil
}

// patternForms returns a pattern with its host lower-cased (hosts compare
// without case), and that form with the literal parts of its path
// lower-cased too; wildcard names keep their case.
func patternForms(p string) (exact, folded string) {
	method, rest := "", p
	if i := strings.IndexAny(p, " \t"); i >= 0 && !strings.Contains(p[:i], "/") {
		method, rest = p[:i+1], strings.TrimLeft(p[i+1:], " \t")
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	exact = method + strings.ToLower(host) + path
	var b strings.Builder
	depth := 0
	for _, c := range path {
		switch {
		case c == '{':
			depth++
		case c == '}':
			depth--
		case depth == 0 && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return exact, method + strings.ToLower(host) + b.String()
}

// spelling is one form of a request the table looks up.
type spelling struct {
	method, path string // path escaped, canonical apart from the folding
	how          string // what was folded, for explain; empty for the request as sent
}

// match returns the index of the first route a spelling of r matches,
// trying r as it is first, or -1, and the spelling that matched. overrides
// are further methods the request may be run as upstream (method override
// headers), tried after r.Method.
func (t *routeTable) match(r *http.Request, overrides []string) (int, spelling) {
	path := r.URL.EscapedPath()
	for i := -1; i < len(overrides); i++ {
		method, how := r.Method, ""
		if i >= 0 {
			method, how = overrides[i], "as "+overrides[i]+" (a method override)"
		}
		if idx, sp := t.matchMethod(method, r.Host, path); idx >= 0 {
			sp.how = strings.TrimPrefix(sp.how+", "+how, ", ")
			sp.how = strings.TrimSuffix(sp.how, ", ")
			return idx, sp
		}
	}
	return -1, spelling{}
}

// matchMethod tries the spellings of path under one method, the path as it
// is first. It allocates only to fold.
func (t *routeTable) matchMethod(method, host, path string) (int, spelling) {
	sp := spelling{method: method, path: path}
	if idx := find(t.exact, host, sp); idx >= 0 || t.folded == nil {
		return idx, sp
	}
	toggled, how := toggleSlash(path)
	sp = spelling{method, toggled, how}
	if idx := find(t.exact, host, sp); idx >= 0 {
		return idx, sp
	}
	lower := strings.ToLower(path)
	if lower == path && t.foldedSame {
		return -1, spelling{}
	}
	for _, sp := range [2]spelling{{method, lower, "lower-cased"}, {method, "", "lower-cased, " + how}} {
		if sp.path == "" {
			sp.path, _ = toggleSlash(lower)
		}
		if idx := find(t.folded, host, sp); idx >= 0 {
			return idx, sp
		}
	}
	return -1, spelling{}
}

// toggleSlash adds a trailing slash to path, or removes it; "/" stays.
func toggleSlash(path string) (string, string) {
	if path == "/" {
		return path, "as is"
	}
	if strings.HasSuffix(path, "/") {
		return path[:len(path)-1], "trailing slash removed"
	}
	return path + "/", "trailing slash added"
}

// scratch is a request the table looks spellings up with, reused.
type scratch struct {
	req http.Request
	url url.URL
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// find looks one spelling up in mux and returns its route's index, or -1.
func find(mux *http.ServeMux, host string, l spelling) int {
	s := scratches.Get().(*scratch)
	defer scratches.Put(s)
	s.url = url.URL{Path: l.path}
	if strings.IndexByte(l.path, '%') >= 0 {
		s.url.Path, _ = url.PathUnescape(l.path) // canonical: cannot fail
		s.url.RawPath = l.path
	}
	s.req = http.Request{Method: l.method, Host: host, URL: &s.url}
	h, _ := mux.Handler(&s.req)
	if m, ok := h.(routeMark); ok {
		return int(m)
	}
	return -1
}
