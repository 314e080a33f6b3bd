package quota

import "fmt"

// Algorithm selects how a [Rule] counts.
type Algorithm uint8

const (
	// FixedWindow counts calls per aligned window of Rule.Window. It is the zero
	// value.
	FixedWindow Algorithm = iota
	// GCRA is a continuously refilled token bucket: Rule.Limit tokens per
	// Rule.Window, holding at most Rule.Burst.
	GCRA
)

// String returns "fixed_window" or "gcra".
func (a Algorithm) String() string {
	switch a {
	case FixedWindow:
		return "fixed_window"
	case GCRA:
		return "gcra"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}
