package routes

import (
	"net"
	"net/url"
	"path"
	"strings"
)

// tree finds which of its patterns ServeMux would hand a request to: a
// copy of ServeMux's routing tree and of the look-up of its Handler
// method, for patterns a ServeMux has accepted beside each other. It
// takes a host, method and escaped path instead of a request, and does
// not gather wildcard values, which a table reads by position when asked
// (PathValues): through ServeMux, a look-up cost a refusal an allocation
// and a seventh of the CPU of its handling in memory (BenchmarkServedCPU).
// TestTreeAsServeMux, TestTreeRandomTables and FuzzTree hold it to
// ServeMux's answers.
//
// A tree does not change once built, and is safe for concurrent use.
type tree struct {
	hosts map[string]methods // "": the patterns without a host
}

// methods are a host's patterns by method, "" for those without one.
type methods map[string]*node

// node is a path segment's place in the tree, as in ServeMux: a pattern
// ends at its last segment's node, or at the multi child for a {name...}
// wildcard or a trailing slash.
type node struct {
	leaf     bool
	route    int  // the route of the pattern ending here
	multiEnd bool // that pattern ends in a multi wildcard
	segments int  // that pattern's segments, its trailing slash or {$} counting as one
	children map[string]*node
	wild     *node // a {name} wildcard
	multi    *node // a {name...} wildcard or a trailing slash
}

// add puts a pattern ServeMux has just accepted beside the tree's others
// into the tree, for route.
func (t *tree) add(pattern string, route int) {
	method, host, path := Split(pattern)
	if t.hosts == nil {
		t.hosts = make(map[string]methods)
	}
	ms := t.hosts[host]
	if ms == nil {
		ms = make(methods)
		t.hosts[host] = ms
	}
	n := ms[method]
	if n == nil {
		n = new(node)
		ms[method] = n
	}
	segs := segments(path)
	for _, sg := range segs {
		switch {
		case sg.multi:
			n = n.child(&n.multi)
			n.end(route, true, len(segs))
			return
		case sg.wild || sg.s == "":
			// ServeMux files an empty literal where a {name} wildcard
			// goes (Check refuses such patterns; a tree matches as
			// ServeMux does all the same).
			n = n.child(&n.wild)
		default:
			n = n.literal(sg.s)
		}
	}
	n.end(route, false, len(segs))
}

// segment is a segment of a pattern's path as ServeMux reads it: a
// literal, unescaped ("/" for {$}), a {name} wildcard, or a multi
// wildcard ({name...}, or a trailing slash, which has no name).
type segment struct {
	s           string // the literal, or the wildcard's name
	wild, multi bool
}

// segments takes the path of a pattern ServeMux has accepted apart as
// ServeMux does.
func segments(path string) []segment {
	var segs []segment
	for len(path) > 0 {
		path = path[1:]
		if path == "" {
			return append(segs, segment{wild: true, multi: true}) // a trailing slash
		}
		seg := path
		if i := strings.IndexByte(path, '/'); i >= 0 {
			seg, path = path[:i], path[i:]
		} else {
			path = ""
		}
		switch {
		case seg == "{$}":
			segs = append(segs, segment{s: "/"})
		case strings.HasPrefix(seg, "{"):
			name, multi := strings.CutSuffix(seg[1:len(seg)-1], "...")
			segs = append(segs, segment{s: name, wild: true, multi: multi})
		default:
			segs = append(segs, segment{s: pathUnescape(seg)})
		}
	}
	return segs
}

func (n *node) child(c **node) *node {
	if *c == nil {
		*c = new(node)
	}
	return *c
}

func (n *node) literal(seg string) *node {
	c := n.children[seg]
	if c == nil {
		if n.children == nil {
			n.children = make(map[string]*node)
		}
		c = new(node)
		n.children[seg] = c
	}
	return c
}

func (n *node) end(route int, multi bool, segments int) {
	n.leaf, n.route, n.multiEnd, n.segments = true, route, multi, segments
}

// find returns the route of the pattern ServeMux's Handler would serve a
// request of host, method and escaped path with, or -1 when it would
// serve none: no pattern matches, or only under another method, or it
// would redirect (to the cleaned path, or to the path with a slash
// added).
func (t *tree) find(host, method, escaped string) int {
	host = stripHostPort(host)
	p := cleanPath(escaped)
	n := t.match(host, method, p)
	if n == nil || p != escaped {
		return -1
	}
	if !exactMatch(n, p) && !strings.HasSuffix(p, "/") {
		if n2 := t.match(host, method, p+"/"); exactMatch(n2, p+"/") {
			return -1
		}
	}
	return n.route
}

// match is ServeMux's: patterns with the request's host before those
// without one.
func (t *tree) match(host, method, path string) *node {
	if host != "" {
		if n := t.hosts[host].match(method, path); n != nil {
			return n
		}
	}
	return t.hosts[""].match(method, path)
}

// match is ServeMux's: the request's method, GET for HEAD, then no method.
func (ms methods) match(method, path string) *node {
	if ms == nil {
		return nil
	}
	if n := ms[method].match(path); n != nil {
		return n
	}
	if method == "HEAD" {
		if n := ms["GET"].match(path); n != nil {
			return n
		}
	}
	return ms[""].match(path)
}

// match is ServeMux's: a literal segment before a {name} wildcard, which
// takes no trailing slash, before a multi wildcard.
func (n *node) match(path string) *node {
	if n == nil {
		return nil
	}
	if path == "" {
		if !n.leaf {
			return nil
		}
		return n
	}
	seg, rest := firstSegment(path)
	if c := n.children[seg].match(rest); c != nil {
		return c
	}
	if seg != "/" {
		if c := n.wild.match(rest); c != nil {
			return c
		}
	}
	return n.multi
}

// exactMatch is ServeMux's: n's pattern matches path with nothing left for
// a multi wildcard.
func exactMatch(n *node, path string) bool {
	if n == nil {
		return false
	}
	if !n.multiEnd {
		return true
	}
	if len(path) > 0 && path[len(path)-1] != '/' {
		return false
	}
	return n.segments == strings.Count(path, "/")
}

// firstSegment is ServeMux's: the first segment of path, unescaped, and
// the rest; "/" for a trailing slash.
func firstSegment(path string) (seg, rest string) {
	if path == "/" {
		return "/", ""
	}
	path = path[1:]
	i := strings.IndexByte(path, '/')
	if i < 0 {
		i = len(path)
	}
	return pathUnescape(path[:i]), path[i:]
}

func pathUnescape(p string) string {
	u, err := url.PathUnescape(p)
	if err != nil {
		return p
	}
	return u
}

// cleanPath is ServeMux's: path.Clean, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			np = p
		} else {
			np += "/"
		}
	}
	return np
}

// stripHostPort is ServeMux's: the host without a port.
func stripHostPort(h string) string {
	if !strings.Contains(h, ":") {
		return h
	}
	host, _, err := net.SplitHostPort(h)
	if err != nil {
		return h
	}
	return host
}
