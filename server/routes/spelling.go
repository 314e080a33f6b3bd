package routes

import (
	"slices"
	"strings"
)

// spelling is one form of a request the table looks up.
type spelling struct {
	method, path string // path escaped, canonical apart from the folding
	how          string // what was mapped and folded, for explain; empty for the request as sent
	override     bool   // method comes from a method override
	unnamed      string // the request's method, which no route on the path names: method is another (see unnamed)
	lower        bool   // path is lower-cased: look it up in the folded mux
	cased        string // with lower, path before it was lower-cased, for the wildcards' values
}

// spellings returns the forms of a path the table looks up under method:
// as it is, with its trailing slash toggled, lower-cased, and both; only
// the first without folding, and no lower-case forms when they would be
// the same look-ups.
func (t *Table) spellings(method, path string) (list [4]spelling, n int) {
	list[0] = spelling{method: method, path: path}
	if t.folded == nil {
		return list, 1
	}
	toggled, how := toggleSlash(path)
	list[1] = spelling{method: method, path: toggled, how: how}
	lower := strings.ToLower(path)
	if lower == path && t.foldedSame {
		return list, 2
	}
	lowerToggled, _ := toggleSlash(lower)
	lowerHow := "lower-cased, " + slashAdded
	if how == slashRemoved {
		lowerHow = "lower-cased, " + slashRemoved
	}
	list[2] = spelling{method: method, path: lower, how: "lower-cased", lower: true, cased: path}
	list[3] = spelling{method: method, path: lowerToggled, how: lowerHow, lower: true, cased: toggled}
	return list, 4
}

// treeFor returns the tree a spelling is looked up in: lower-cased
// spellings in the folded one.
func (t *Table) treeFor(sp spelling) *tree {
	if sp.lower {
		return t.folded
	}
	return t.exact
}

// What a toggled spelling changed, for explain.
const (
	slashAdded   = "trailing slash added"
	slashRemoved = "trailing slash removed"
)

// toggleSlash adds a trailing slash to path, or removes it; "/" stays.
func toggleSlash(path string) (string, string) {
	if path == "/" {
		return path, "as is"
	}
	if strings.HasSuffix(path, "/") {
		return path[:len(path)-1], slashRemoved
	}
	return path + "/", slashAdded
}

// lookUp appends to dst the routes that the spellings of vs under as's
// method match, and that dst does not hold yet, each with as's flags.
// first is the route that the first variant, as it is, matches under that
// method, when known; -1 otherwise.
func (t *Table) lookUp(host string, vs []variant, as spelling, first int, dst []Match) []Match {
	for j := range vs {
		v := vs[(j+1)%len(vs)] // the variants, then the path as it is
		if !t.mayMatch(v.path) {
			continue
		}
		list, count := t.spellings(as.method, v.path)
		for k, sp := range list[:count] {
			sp.override, sp.unnamed = as.override, as.unnamed
			sp.how = join(v.how, sp.how)
			idx := first
			if first < 0 || k > 0 {
				idx = find(t.treeFor(sp), host, sp)
			}
			if idx < 0 || as.unnamed != "" && t.strict[idx] {
				continue
			}
			if !slices.ContainsFunc(dst, func(m Match) bool { return m.Route == idx }) {
				dst = append(dst, Match{idx, sp})
			}
		}
	}
	return dst
}
