package store

import (
	"context"
	"fmt"
	"time"

	"github.com/admitgo/admit/quota"
)

// Decider runs each decision of a store that can fail, the same way for
// every such store: bounded by Timeout, a failure turned into the policy's
// decision with an error naming the store and the rule, and the decision
// counted. A store builds one in its New and keeps it; the fields never
// change afterwards, so it is safe for concurrent use.
type Decider struct {
	// Prefix starts every store error: the store's package name, "pgquota".
	Prefix string
	// Failure is what a failed decision becomes; see [quota.Failure.Fail].
	Failure quota.Failure
	// Timeout bounds each decision; it must be positive.
	Timeout time.Duration
	// Metrics counts the decisions; nil counts nothing.
	Metrics *Metrics
}

// Decide runs decide with a context bounded by Timeout. An error it returns
// becomes the Failure policy's decision, wrapped as "<Prefix>: rule <name>:
// <err>". The decision is counted either way. Caller errors are the store's
// to refuse before calling Decide.
func (d *Decider) Decide(ctx context.Context, rule quota.Rule, decide func(context.Context) (quota.Decision, error)) (quota.Decision, error) {
	return d.DecideBy(ctx, rule, func(ctx context.Context, deadline time.Time) (quota.Decision, error) {
		tctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		return decide(tctx)
	})
}

// DecideBy is Decide for a store that keeps the deadline itself: decide
// gets ctx as the caller passed it and the time by which it must answer,
// Timeout from now. A batching store's flusher bounds each batch by its
// calls' deadlines, so a call waiting for its batch needs no timer of its
// own, which cost a fifth of the client's CPU in a batch of 24.
func (d *Decider) DecideBy(ctx context.Context, rule quota.Rule, decide func(ctx context.Context, deadline time.Time) (quota.Decision, error)) (quota.Decision, error) {
	start := time.Now()
	dec, err := decide(ctx, start.Add(d.Timeout))
	if err != nil {
		dec, err = d.Failure.Fail(rule, fmt.Errorf("%s: rule %q: %w", d.Prefix, rule.Name, err))
	}
	d.Metrics.Record(ctx, dec, err, time.Since(start))
	return dec, err
}
