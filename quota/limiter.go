package quota

import "context"

// Limiter decides calls against shared rules. Implementations are safe for
// concurrent use.
type Limiter interface {
	// Allow counts one call of subject against rule. A non-nil error means the
	// store failed (the decision then follows the store's failure policy) or
	// the caller passed an invalid rule or subject (the call is refused).
	Allow(ctx context.Context, rule Rule, subject string) (Decision, error)
}

// Charger is a [Limiter] that can also look without spending, spend more
// than one, and give back: AllowN(ctx, rule, subject, 0) reports whether one
// more call would be allowed and changes nothing; AllowN with n > 0 counts n
// calls at once; Refund gives back n calls counted moments ago, for a call
// that another limit refused afterwards. A token bucket gets its n tokens
// back; the current fixed window's count drops by n, never below zero. A
// refund is meant to follow its call within microseconds: if a window ends
// in between, the refund comes off the new window's count, which then admits
// up to n more. The door uses AllowN to charge webhooks only when they
// fail, and Refund so that one limit's refusal spends no other limit's
// budget.
type Charger interface {
	Limiter
	AllowN(ctx context.Context, rule Rule, subject string, n int) (Decision, error)
	Refund(ctx context.Context, rule Rule, subject string, n int) error
}

// RuleChecker is implemented by stores that can say, before any call, whether
// they can enforce a rule, so that a caller can refuse a configuration at
// startup rather than fail every call.
type RuleChecker interface {
	CheckRule(rule Rule) error
}
