package quota

import "strconv"

// A RuleError refuses a rule that cannot be enforced: [Rule.Validate]
// returns one, and so do the stores, for their own limits and for a call's
// cost. It wraps [ErrRule], so errors.Is(err, ErrRule) holds; a caller that
// reports the refusal in its own words reads Rule and Reason with
// errors.As rather than parsing the message.
type RuleError struct {
	// Rule is the name of the rule refused.
	Rule string
	// Reason says what is refused, starting with the field and its value
	// where one field of Rule is at fault: "Window 500µs, the Redis store
	// needs at least 1ms".
	Reason string
}

// Error reads `quota: invalid rule "NAME": REASON`.
func (e *RuleError) Error() string {
	return ErrRule.Error() + " " + strconv.Quote(e.Rule) + ": " + e.Reason
}

// Unwrap returns [ErrRule].
func (e *RuleError) Unwrap() error { return ErrRule }
