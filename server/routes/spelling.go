package routes

import "strings"

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
