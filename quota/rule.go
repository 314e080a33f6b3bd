package quota

import (
	"errors"
	"fmt"
	"time"
)

// Rule is one shared limit. The zero Rule is invalid: Limit and Window must be
// positive.
type Rule struct {
	// Name scopes the rule's counters: it becomes the prefix of every bucket
	// key, so renaming a rule resets its counters.
	Name string
	// Limit is how many calls one subject may make per Window.
	Limit int
	// Window is the period Limit applies to.
	Window time.Duration
	// Algorithm is FixedWindow (the zero value) or TokenBucket.
	Algorithm Algorithm
	// Burst is how many calls a TokenBucket subject may make at once after
	// being idle; 0 means Limit. FixedWindow ignores it.
	Burst int
}

// ErrRule reports a rule that cannot be enforced; it is a caller error.
// Every such error is a [*RuleError].
var ErrRule = errors.New("quota: invalid rule")

// Validate reports whether the rule can be enforced. The error is a
// [*RuleError] naming the rule and the field.
func (r Rule) Validate() error {
	why := ""
	switch {
	case r.Limit < 1:
		why = fmt.Sprintf("Limit %d, want at least 1", r.Limit)
	case r.Window <= 0:
		why = fmt.Sprintf("Window %v, want a positive duration", r.Window)
	case r.Algorithm > TokenBucket:
		why = fmt.Sprintf("Algorithm %v, want FixedWindow or TokenBucket", r.Algorithm)
	case r.Burst < 0:
		why = fmt.Sprintf("Burst %d, want 0 (Limit) or more", r.Burst)
	default:
		return nil
	}
	return &RuleError{Rule: r.Name, Reason: why}
}

// BurstOrLimit returns the rule's token-bucket burst: Burst, or Limit when
// Burst is 0.
func (r Rule) BurstOrLimit() int {
	if r.Burst == 0 {
		return r.Limit
	}
	return r.Burst
}
