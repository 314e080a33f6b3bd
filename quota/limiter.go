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
