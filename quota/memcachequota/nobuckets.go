package memcachequota

import (
	"context"

	"github.com/admitgo/admit/quota"
)

// NoBuckets is the [quota.Charger] of a memcached store: it decides no
// rule. memcached has no scripts or transactions, so a token bucket, whose
// every decision reads a time and writes the next one, cannot be decided
// on it without two callers spending the same tokens; fixed windows are
// counted by a [Counter]. CheckRule ([quota.RuleChecker]) refuses every
// rule with a [*quota.RuleError] saying so, so that admit rls refuses a
// configuration with a token bucket at startup and on reload, and every
// call fails the same way. The zero value is ready to use; it is safe for
// concurrent use.
type NoBuckets struct{}

// CheckRule refuses rule: see [NoBuckets].
func (NoBuckets) CheckRule(rule quota.Rule) error {
	why := "memcached decides no rule: its Counter counts fixed windows for admit rls"
	if rule.Algorithm == quota.TokenBucket {
		why = "Algorithm token-bucket: memcached cannot decide a token bucket atomically (it has no scripts or transactions); " +
			"use a fixed window, or a Redis or PostgreSQL store"
	}
	return &quota.RuleError{Rule: rule.Name, Reason: why}
}

// Allow refuses the call with CheckRule's error.
func (n NoBuckets) Allow(_ context.Context, rule quota.Rule, _ string) (quota.Decision, error) {
	return quota.Decision{}, n.CheckRule(rule)
}

// AllowN refuses the call with CheckRule's error.
func (n NoBuckets) AllowN(_ context.Context, rule quota.Rule, _ string, _ int) (quota.Decision, error) {
	return quota.Decision{}, n.CheckRule(rule)
}

// Refund refuses the call with CheckRule's error.
func (n NoBuckets) Refund(_ context.Context, rule quota.Rule, _ string, _ int) error {
	return n.CheckRule(rule)
}
