package quota

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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
	// Algorithm is FixedWindow (the zero value) or GCRA.
	Algorithm Algorithm
	// Burst is how many calls a GCRA subject may make at once after being
	// idle; 0 means Limit. FixedWindow ignores it.
	Burst int
}

// ErrRule reports a rule that cannot be enforced; it is a caller error.
var ErrRule = errors.New("quota: invalid rule")

// Validate reports whether the rule can be enforced. The error wraps
// [ErrRule] and names the rule and the field.
func (r Rule) Validate() error {
	switch {
	case r.Limit < 1:
		return fmt.Errorf("%w %q: Limit %d, want at least 1", ErrRule, r.Name, r.Limit)
	case r.Window <= 0:
		return fmt.Errorf("%w %q: Window %v, want a positive duration", ErrRule, r.Name, r.Window)
	case r.Algorithm > GCRA:
		return fmt.Errorf("%w %q: unknown %v", ErrRule, r.Name, r.Algorithm)
	case r.Burst < 0:
		return fmt.Errorf("%w %q: Burst %d, want 0 (Limit) or more", ErrRule, r.Name, r.Burst)
	}
	return nil
}

// BurstOrLimit returns the rule's GCRA burst: Burst, or Limit when Burst is 0.
func (r Rule) BurstOrLimit() int {
	if r.Burst == 0 {
		return r.Limit
	}
	return r.Burst
}

// Decision is a store's answer to one call.
type Decision struct {
	// Allowed reports whether the call may proceed.
	Allowed bool
	// Remaining is how many more calls would be allowed right now; never
	// negative.
	Remaining int
	// RetryAfter is, for FixedWindow, the time until the window ends (also
	// when allowed); for GCRA, the time until the next call would be allowed
	// (0 when it would be now).
	RetryAfter time.Duration
	// Limit and Window echo the rule, so a caller can build response headers
	// from the decision alone.
	Limit  int
	Window time.Duration
}

// Limiter decides calls against shared rules. Implementations are safe for
// concurrent use.
type Limiter interface {
	// Allow counts one call of subject against rule. A non-nil error means the
	// store failed (the decision then follows the store's failure policy) or
	// the caller passed an invalid rule or subject (the call is refused).
	Allow(ctx context.Context, rule Rule, subject string) (Decision, error)
}

// Charger is a [Limiter] that can also look without spending and spend more
// than one: AllowN(ctx, rule, subject, 0) reports whether one more call would be
// allowed and changes nothing; AllowN with n > 0 counts n calls at once. The
// door uses it to charge webhooks only when they fail.
type Charger interface {
	Limiter
	AllowN(ctx context.Context, rule Rule, subject string, n int) (Decision, error)
}

// RuleChecker is implemented by stores that can say, before any call, whether
// they can enforce a rule, so that a caller can refuse a configuration at
// startup rather than fail every call.
type RuleChecker interface {
	CheckRule(rule Rule) error
}
