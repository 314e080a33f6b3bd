package store

import (
	"fmt"

	"github.com/admitgo/admit/quota"
)

// Check validates a call before a store counts it: the rule, the cost n (0 or
// more) and the subject. Stores return its error with [Refuse]'s decision,
// whatever their failure policy, and add their own limits after it.
func Check(rule quota.Rule, subject string, n int) error {
	if err := rule.Validate(); err != nil {
		return err
	}
	if n < 0 {
		return &quota.RuleError{Rule: rule.Name, Reason: fmt.Sprintf("cost %d, want 0 or more", n)}
	}
	return CheckSubject(subject)
}

// CheckSubject returns an error wrapping [quota.ErrSubject] unless s has the
// form [quota.Subject] returns. Stores call it before touching any key; the
// error never repeats the rejected value, which may be raw identifying
// material.
func CheckSubject(s string) error {
	if len(s) != quota.SubjectLen {
		return fmt.Errorf("%w: got %d characters", quota.ErrSubject, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: character %d is not lowercase hex", quota.ErrSubject, i)
		}
	}
	return nil
}

// Refuse is the decision for a caller error: refused whatever the policy,
// with RetryAfter the rule's window, and err with it.
func Refuse(rule quota.Rule, err error) (quota.Decision, error) {
	return quota.Decision{Limit: rule.Limit, Window: rule.Window, RetryAfter: rule.Window}, err
}

// SpanWithin reports whether a GCRA rule's burst and a call of cost n (at
// least 1) span at most limit nanoseconds, the bound a store's arithmetic
// keeps exact within.
func SpanWithin(rule quota.Rule, n int, limit int64) bool {
	units := int64(rule.BurstOrLimit()) + int64(max(n, 1))
	return units <= limit/int64(Interval(rule))
}
