package server

import "strings"

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
	rest := p
	if i := strings.IndexAny(p, " \t"); i >= 0 && !strings.Contains(p[:i], "/") {
		pt.method, rest = p[:i], strings.TrimLeft(p[i+1:], " \t")
	}
	path := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		pt.host, path = strings.ToLower(rest[:i]), rest[i:]
	}
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
