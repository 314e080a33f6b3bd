package routes

import (
	"fmt"
	"net/http"
	"strings"
)

// Split takes a pattern that ServeMux accepts apart as ServeMux does: the
// method before the first space or tab when no '/' comes before it, then
// the host up to the first '/', then the path. (ServeMux refuses a pattern
// whose first space follows a '/'.)
func Split(p string) (method, host, path string) {
	rest := p
	if i := strings.IndexAny(p, " \t"); i >= 0 && !strings.Contains(p[:i], "/") {
		method, rest = p[:i], strings.TrimLeft(p[i+1:], " \t")
	}
	host = rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	return method, host, path
}

// Host returns the host a pattern names, lower-cased; "" for every host.
func Host(p string) string {
	_, host, _ := Split(p)
	return strings.ToLower(host)
}

// Check refuses a pattern ServeMux would, worded in the pattern's own terms
// (see patternError).
//
// It also refuses a path with an empty, "." or ".." segment that has no
// method, which ServeMux takes: such a segment matches no cleaned path
// (ServeMux refuses it beside a method for that reason), and ServeMux reads
// an empty one as an anonymous wildcard, which would limit /api/v1/users
// under a route written /api//users.
func Check(p string) error {
	if err := register(http.NewServeMux(), p, http.NotFoundHandler()); err != nil {
		return patternError(p, err)
	}
	if _, _, path := Split(p); path != cleanPath(path) {
		return errUncleanPath
	}
	return nil
}

// Conflict reports whether ServeMux refuses p beside earlier, with its
// explanation: both match some request and neither is more specific.
func Conflict(earlier, p string) (why string, conflicts bool) {
	mux := http.NewServeMux()
	mux.Handle(earlier, http.NotFoundHandler())
	if err := register(mux, p, http.NotFoundHandler()); err != nil {
		return conflict(err), true
	}
	return "", false
}

// FoldedConflict is Conflict once the patterns' literal paths are
// lower-cased, as a table that folds case registers them.
func FoldedConflict(earlier, p string) (why string, conflicts bool) {
	_, before := patternForms(earlier)
	_, folded := patternForms(p)
	if before == folded {
		return "lower-cased, both are " + folded, true
	}
	if why, ok := Conflict(before, folded); ok {
		return "lower-cased, " + why, true
	}
	return "", false
}

// conflict keeps ServeMux's explanation of a conflict, which follows the
// line naming both patterns.
func conflict(err error) string {
	msg := err.Error()
	if _, why, ok := strings.Cut(msg, ":\n"); ok {
		msg = why
	}
	return msg
}

// register adds pattern to mux, turning ServeMux's panic into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// pattern is a ServeMux pattern taken apart, for the overlap check.
type pattern struct {
	method, host string
	segs         []string // the path's segments, literal parts lower-cased; "{}" for a wildcard
	rest         bool     // the pattern matches any rest: a {name...} wildcard or a trailing slash
}

// parsePattern takes a ServeMux pattern apart. It is only ever given
// patterns ServeMux has accepted.
func parsePattern(p string) pattern {
	var pt pattern
	method, host, path := Split(p)
	pt.method, pt.host = method, strings.ToLower(host)
	path = strings.TrimSuffix(path, "{$}")
	if strings.HasSuffix(path, "/") && len(path) > 1 && !strings.HasSuffix(p, "{$}") {
		pt.rest = true
	}
	for _, s := range strings.Split(strings.Trim(path, "/"), "/") {
		switch {
		case s == "":
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}"):
			pt.rest = true
		case strings.HasPrefix(s, "{"):
			pt.segs = append(pt.segs, "{}")
		default:
			pt.segs = append(pt.segs, strings.ToLower(s))
		}
	}
	if path == "/" {
		pt.rest = true // "/" matches every path
	}
	return pt
}

// mayFoldOverlap reports, conservatively, whether some request that a
// matches could, once its path is lower-cased or has its trailing slash
// toggled, be matched by b. It errs towards true: a false true costs the
// request further look-ups, a false false would let a spelling past b.
func mayFoldOverlap(a, b pattern) bool {
	methods := a.method == "" || b.method == "" || a.method == b.method ||
		(a.method == "GET" || a.method == "HEAD") && (b.method == "GET" || b.method == "HEAD")
	hosts := a.host == "" || b.host == "" || a.host == b.host
	if !methods || !hosts {
		return false
	}
	n := min(len(a.segs), len(b.segs))
	for i := range n {
		if x, y := a.segs[i], b.segs[i]; x != y && x != "{}" && y != "{}" {
			return false
		}
	}
	switch {
	case len(a.segs) == len(b.segs):
		return true
	case len(a.segs) < len(b.segs):
		return a.rest
	}
	return b.rest
}
