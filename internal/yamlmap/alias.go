package yamlmap

import "go.yaml.in/yaml/v3"

// maxNodes caps the count of nodes an expanded document stands for, so
// that the count cannot overflow; any document near it is refused.
const maxNodes = 1 << 40

// CheckAliases refuses the aliases of document n that a reader following
// them could not finish: an alias inside the value its anchor names (a
// *Error of Problem Recursive at the alias), whose walk would never end,
// and aliases that make the document stand for far more nodes than it holds
// (Excessive), whose walk would take exponential time. yaml's decoders
// refuse both when they decode into Go values, which envoyproxy/ratelimit
// does; a decode into nodes refuses neither, so each reader of nodes calls
// this once. The bound is yaml.v3's: up to 99 % of the expanded nodes may
// come from aliases in a document of up to 400,000, down to 10 % from
// 4,000,000 on. It takes time in proportion to the nodes as written.
func CheckAliases(n *yaml.Node) error {
	c := aliasCheck{size: make(map[*yaml.Node]int), open: make(map[*yaml.Node]bool)}
	total, err := c.expanded(n)
	if err != nil {
		return err
	}
	if aliased := total - written(n); excessive(total, aliased) {
		return &Error{Problem: Excessive, Node: n}
	}
	return nil
}

// aliasCheck counts the nodes each node stands for, once each.
type aliasCheck struct {
	size map[*yaml.Node]int  // the count of each node counted
	open map[*yaml.Node]bool // the nodes whose count is under way: n's ancestors
}

// expanded returns how many nodes n stands for with its aliases expanded,
// n included, as a decoder would visit them, up to maxNodes.
func (c *aliasCheck) expanded(n *yaml.Node) (int, error) {
	if s, ok := c.size[n]; ok {
		return s, nil
	}
	children := n.Content
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		if c.open[n.Alias] {
			return 0, &Error{Problem: Recursive, Node: n}
		}
		children = []*yaml.Node{n.Alias}
	}
	c.open[n] = true
	s := 1
	for _, child := range children {
		cs, err := c.expanded(child)
		if err != nil {
			return 0, err
		}
		s = min(s+cs, maxNodes)
	}
	delete(c.open, n)
	c.size[n] = s
	return s, nil
}

// written returns how many nodes n holds as written, an alias counting as
// one.
func written(n *yaml.Node) int {
	s := 1
	for _, child := range n.Content {
		s += written(child)
	}
	return s
}

// excessive reports yaml.v3's refusal of a document whose decode visits
// total nodes, aliased of them through aliases.
func excessive(total, aliased int) bool {
	const low, high = 400_000, 4_000_000
	allowed := 0.99
	switch {
	case total >= high:
		allowed = 0.10
	case total > low:
		allowed = 0.99 - 0.89*float64(total-low)/float64(high-low)
	}
	return aliased > 100 && total > 1000 && float64(aliased)/float64(total) > allowed
}
