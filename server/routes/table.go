// Package routes finds the routes a canonical request is limited by: every
// spelling of it that the app's router would send to the same handler,
// looked up with ServeMux's matching and precedence: ServeMux accepts the
// patterns, and a copy of its routing tree, held to ServeMux's answers by
// differential tests, looks requests up.
package routes

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/admitgo/admit/internal/canon"
)

// Table finds the routes a canonical request is limited by. It uses
// ServeMux's matching and precedence, and, since upstream routers
// commonly fold case and ignore a trailing slash (Express does both by
// default), it also looks the request up with its path lower-cased and with
// a trailing slash added or removed, so that a spelling the upstream routes
// to a limited handler is limited too. Over-limiting is the safe direction
// when routers disagree. A Table does not change once made, and is safe
// for concurrent use.
type Table struct {
	patterns []string
	exact    *tree // the patterns as written, hosts lower-cased
	folded   *tree // the patterns with their literal path lower-cased; nil without folding
	// foldedSame is set when every pattern is lower-case already, so that a
	// path without upper case needs no second look-up.
	foldedSame bool
	// overlaps[i] is set when a folded spelling of a path that route i
	// matches might match another route; otherwise a request that matches
	// route i as it is needs no other look-up.
	overlaps []bool
	// maps, allow and slashes are how the upstream's framework reads a
	// path (see variants).
	maps    mapping
	allow   canon.Classes
	slashes canon.Slashes
	// others are the methods the routes name besides POST: what a POST
	// might run as under a "_method" parameter.
	others []string
	// firsts are the routes' first path segments, lower-cased, when each
	// route's is a literal: a path whose first segment is none of them, in
	// any case, matches no route in any spelling, since folding changes only
	// case and the trailing slash. nil when some route's is not a literal.
	firsts []string
	wilds  [][]wildcard // per route: its named wildcards
	// methods are the routes' methods, per route ("" for none); named are
	// those of the routes not strict, each once; strict is Matching.Strict
	// for every route. See unnamed.
	methods []string
	named   []string
	strict  []bool
	parsed  []pattern // per route: its pattern taken apart
	// direct[i] is set when a request route i matches as it is, under a
	// method route i names, needs no look-up under another method (see
	// shadowed).
	direct []bool
}

// Matching is how a table finds the routes of a request: the server's
// --route-folding, --upstream-profile, --allow-spellings and
// --escaped-slashes.
type Matching struct {
	Fold    bool          // also look up the path lower-cased and with its trailing slash toggled
	Profile Profile       // the framework's further spellings
	Allow   canon.Classes // the spellings let through the canonical form
	Slashes canon.Slashes // what the canonical form does with an escaped slash
	// Strict marks, by route index, the routes whose handlers the app runs
	// for the route's own method alone, so that a request under a method
	// no route names is not held to them (see unnamed); nil: none.
	Strict []bool
}

// A ConflictError is New's refusal of a pattern that ServeMux refuses
// beside an earlier one, or, with folding, once case is folded.
type ConflictError struct {
	Route   int    // the pattern's index
	Pattern string // the pattern
	Folded  bool   // it conflicts only once case is folded
	Why     string // ServeMux's explanation
}

func (e *ConflictError) Error() string {
	if e.Folded {
		return fmt.Sprintf("pattern %q conflicts with an earlier one once case is folded (%s)", e.Pattern, e.Why)
	}
	return fmt.Sprintf("pattern %q: %s", e.Pattern, e.Why)
}

// New makes the table of patterns, ServeMux patterns in the order their
// routes are given, checking each against ServeMux's syntax (an error as
// Check words it) and the patterns before it (a *ConflictError). With
// folding, patterns that only folding makes conflict are refused too. A
// match names its route by its index in patterns.
func New(patterns []string, m Matching) (*Table, error) {
	patterns = slices.Clone(patterns)
	for _, p := range patterns {
		if err := Check(p); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	t := &Table{patterns: patterns, exact: new(tree), foldedSame: true,
		maps: m.Profile.mappings(), allow: m.Allow, slashes: m.Slashes}
	// ServeMux judges the patterns, and each tree takes those it accepts.
	exactMux, foldedMux := http.NewServeMux(), (*http.ServeMux)(nil)
	if m.Fold {
		t.folded, foldedMux = new(tree), http.NewServeMux()
	}
	for i, p := range patterns {
		exact, folded := patternForms(p)
		if err := register(exactMux, exact, http.NotFoundHandler()); err != nil {
			return nil, &ConflictError{Route: i, Pattern: p, Why: conflict(err)}
		}
		t.exact.add(exact, i)
		if t.folded == nil {
			continue
		}
		if folded != exact {
			t.foldedSame = false
		}
		if err := register(foldedMux, folded, http.NotFoundHandler()); err != nil {
			return nil, &ConflictError{Route: i, Pattern: p, Folded: true, Why: conflict(err)}
		}
		t.folded.add(folded, i)
	}
	parsed := make([]pattern, len(patterns))
	t.wilds = make([][]wildcard, len(patterns))
	t.methods, t.strict = make([]string, len(patterns)), make([]bool, len(patterns))
	copy(t.strict, m.Strict)
	for i, p := range patterns {
		parsed[i] = parsePattern(p)
		t.wilds[i] = wildcards(p)
		t.methods[i] = parsed[i].method
		if m := parsed[i].method; m != "" && !t.strict[i] && !slices.Contains(t.named, m) {
			t.named = append(t.named, m)
		}
		if m := parsed[i].method; m != "" && m != http.MethodPost && !slices.Contains(t.others, m) {
			t.others = append(t.others, m)
		}
	}
	t.firsts = make([]string, 0, len(patterns))
	for _, pt := range parsed {
		if len(pt.segs) == 0 || pt.segs[0] == "{}" {
			t.firsts = nil // "/", "/{x}", "/{x...}": any first segment
			break
		}
		if !slices.Contains(t.firsts, pt.segs[0]) {
			t.firsts = append(t.firsts, pt.segs[0])
		}
	}
	t.parsed, t.direct = parsed, make([]bool, len(patterns))
	for i := range parsed {
		t.direct[i] = !t.shadowed(i)
	}
	t.overlaps = make([]bool, len(patterns))
	for i := range parsed {
		for j := range parsed {
			if i != j && t.folded != nil && mayFoldOverlap(parsed[i], parsed[j]) {
				t.overlaps[i] = true
			}
		}
	}
	return t, nil
}

// patternForms returns a pattern with its host lower-cased (hosts compare
// without case), and that form with the literal parts of its path
// lower-cased too; wildcard names keep their case.
func patternForms(p string) (exact, folded string) {
	method, host, path := Split(p)
	if method != "" {
		method += " "
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

// How says how the spelling a route matched differs from the request as
// sent: "" for the request as it is.
func (m Match) How() string {
	sp := m.sp
	switch {
	case sp.override:
		return join(sp.how, "as "+sp.method+" (a method override)")
	case sp.unnamed != "":
		return join(sp.how, "as "+sp.method+" (no route names "+sp.unnamed+" on this path, and an app may run a view for any method)")
	}
	return sp.how
}

// Match is a route a spelling of a request matched.
type Match struct {
	Route int // the route's index in the table's patterns
	sp    spelling
}

// MaxOverrides bounds the methods one source of overrides may name (the
// override headers, or _method parameters). MaxSpellings is the room the
// front gives matchAll on its stack: four spellings of a path under its
// method and each override; a request that matches more routes, through
// the profile's variants, grows it.
const (
	MaxOverrides = 3
	MaxSpellings = 4 * (1 + MaxOverrides)
)

// matchAll appends to dst every route some spelling of r matches, once
// each, in the order the spellings are tried: under r's method, then under
// each method of overrides (at most MaxOverrides), the variants that the
// upstream's framework maps r's path to (see variants), then the path as
// it is, each as it is and then folded; then, for each of those methods
// that no route it matched names, under every method the routes name (see
// unnamed). The variants come first so that a route they match keys by
// the wildcards' values as the framework reads them. It allocates only to
// map, to fold, or for a path with variants.
func (t *Table) matchAll(r *http.Request, overrides []string, dst []Match) []Match {
	path := r.URL.EscapedPath()
	// Room for the path alone, the common case: a buffer for all 18
	// variants (576 bytes of pointers) was cleared on every call, and was
	// matchAll's largest cost under a flood of refusals.
	var one [1]variant
	vs := variants(path, t.maps, t.allow, t.slashes, one[:0])
	first := -1
	if len(vs) == 1 {
		if !t.mayMatch(path) {
			return dst
		}
		first = find(t.exact, r.Host, spelling{method: r.Method, path: path})
		if first >= 0 && len(overrides) == 0 && !t.overlaps[first] && t.names(first, r.Method) && t.direct[first] {
			return append(dst, Match{first, spelling{method: r.Method, path: path}}) // no other spelling finds another route
		}
	}
	start := len(dst)
	for i := -1; i < len(overrides); i++ {
		if i < 0 {
			dst = t.lookUp(r.Host, vs, spelling{method: r.Method}, first, dst)
		} else {
			dst = t.lookUp(r.Host, vs, spelling{method: overrides[i], override: true}, -1, dst)
		}
	}
	for i := -1; i < len(overrides); i++ {
		method := r.Method
		if i >= 0 {
			method = overrides[i]
		}
		dst = t.unnamed(r.Host, vs, method, start, dst)
	}
	return dst
}

// mayMatch reports whether some route might match a spelling of path: no
// route does when the first segment of path is none of the routes' first
// segments.
func (t *Table) mayMatch(path string) bool {
	if t.firsts == nil {
		return true
	}
	seg := strings.TrimPrefix(path, "/")
	if i := strings.IndexByte(seg, '/'); i >= 0 {
		seg = seg[:i]
	}
	// A route's first segment compares with the path's escaped segment:
	// canonical paths escape only what a literal in a pattern would too.
	for _, f := range t.firsts {
		if strings.EqualFold(f, seg) || strings.ContainsRune(f, '%') || strings.IndexByte(seg, '%') >= 0 {
			return true
		}
	}
	return false
}

// PathValues returns the wildcard values of the route m matched, by name,
// as ServeMux hands them to its handlers: a {name} wildcard's segment and a
// {name...} wildcard's rest of the path, unescaped. They are read by
// position from the spelling m matched, so that, for a lower-cased
// spelling, they keep the case the request sent: an app that folds case
// to route still hands its handler the value as sent, so /L/QQQ and
// /l/QQQ are one value, and one budget.
func (t *Table) PathValues(m Match, names []string) []string {
	path := m.sp.path
	if m.sp.lower {
		path = m.sp.cased
	}
	values := make([]string, len(names))
	for _, w := range t.wilds[m.Route] {
		if i := slices.Index(names, w.name); i >= 0 {
			values[i] = w.valueIn(path)
		}
	}
	return values
}

// wildcard is a named wildcard of a route's path: ServeMux matches a path
// segment by segment, so its value is the segment at its place, or the
// rest of the path from there.
type wildcard struct {
	name string
	seg  int  // its segment's index, the first after the leading slash being 0
	rest bool // {name...}
}

// wildcards lists the named wildcards of a pattern's path.
func wildcards(p string) []wildcard {
	_, _, path := Split(p)
	var ws []wildcard
	for k, sg := range segments(path) {
		if sg.wild && sg.s != "" {
			ws = append(ws, wildcard{name: sg.s, seg: k, rest: sg.multi})
		}
	}
	return ws
}

// valueIn returns w's value in path, which w's pattern matches.
func (w wildcard) valueIn(path string) string {
	p := strings.TrimPrefix(path, "/")
	for range w.seg {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return ""
		}
		p = p[i+1:]
	}
	if i := strings.IndexByte(p, '/'); i >= 0 && !w.rest {
		p = p[:i]
	}
	v, _ := url.PathUnescape(p) // canonical: cannot fail
	return v
}

// find looks one spelling up in tr and returns its route's index, or -1.
func find(tr *tree, host string, sp spelling) int {
	return tr.find(host, sp.method, muxPath(sp.path))
}

// muxPath is the path ServeMux would match for a spelling's path p: its
// url.URL's EscapedPath, with p as the raw path. That is p, but when p
// holds an escape beside a byte a raw path may not hold, which makes
// EscapedPath escape the unescaped path anew (an escaped slash then
// splits a segment). Without an escape, EscapedPath escapes bytes of p
// that matching unescapes again, and that path.Clean leaves alone, so p
// matches alike.
func muxPath(p string) string {
	if strings.IndexByte(p, '%') < 0 {
		return p
	}
	for i := 0; i < len(p); i++ {
		if !rawPathByte[p[i]] {
			u := url.URL{Path: pathUnescape(p), RawPath: p}
			return u.EscapedPath()
		}
	}
	return p
}

// rawPathByte holds the bytes url.URL keeps in a raw path (its
// validEncoded): those a path keeps unescaped, '%', and !'()*[].
var rawPathByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("-_.~$&+,/:;=@%!'()*[]", byte(c)) >= 0
	}
	return t
}()
