package quota

import (
	"context"
	"fmt"
	"time"
)

// Policy is what a store does when it cannot decide.
type Policy uint8

const (
	// FailClosed refuses the call, with RetryAfter set to the rule's window,
	// and returns the store's error. It is the zero value: a limiter that
	// cannot count is not limiting, and the routes it guards matter most when
	// things already go wrong.
	FailClosed Policy = iota
	// FailOpen allows the call, with Remaining set to the rule's limit, and
	// returns the store's error.
	FailOpen
)

// PolicyFor returns FailOpen when failOpen is set, FailClosed otherwise; stores
// take a FailOpen bool in their configs.
func PolicyFor(failOpen bool) Policy {
	if failOpen {
		return FailOpen
	}
	return FailClosed
}

// Fail is the one place a store's failure becomes a decision: it applies the
// policy to rule and returns err with it.
func (p Policy) Fail(rule Rule, err error) (Decision, error) {
	d := Decision{Limit: rule.Limit, Window: rule.Window}
	if p == FailOpen {
		d.Allowed = true
		d.Remaining = rule.Limit
	} else {
		d.RetryAfter = rule.Window
	}
	return d, err
}

// Refuse is the decision for a caller error: refused whatever the policy.
func Refuse(rule Rule, err error) (Decision, error) {
	return Decision{Limit: rule.Limit, Window: rule.Window, RetryAfter: rule.Window}, err
}

// Decide runs one store decision the way every store does: decide gets a
// context bounded by timeout; an error it returns becomes the policy's
// decision, wrapped with prefix and the rule's name; and the decision is
// counted in m (which may be nil). It is the one place where a store's
// timeout, failure policy and metrics meet.
func (p Policy) Decide(ctx context.Context, m *Metrics, rule Rule, timeout time.Duration, prefix string, decide func(context.Context) (Decision, error)) (Decision, error) {
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	d, err := decide(tctx)
	cancel()
	if err != nil {
		d, err = p.Fail(rule, fmt.Errorf("%s: rule %q: %w", prefix, rule.Name, err))
	}
	m.Record(ctx, d, err, time.Since(start))
	return d, err
}
