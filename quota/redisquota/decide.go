package redisquota

import (
	"context"
	"time"

	"github.com/admitgo/admit/quota"
)

// A call is one decision the store was asked for, and its answer.
type call struct {
	rule quota.Rule
	key  string
	n    int
	d    quota.Decision
	err  error
	// Batch only: the time the call must be answered by, and a channel
	// signalled once d and err are set.
	deadline time.Time
	done     chan struct{}
}

// Deadline, Expire and Signal let store.FlushDue answer a batched call.
func (c *call) Deadline() time.Time { return c.deadline }
func (c *call) Expire()             { c.err = context.DeadlineExceeded }
func (c *call) Signal()             { c.done <- struct{}{} }

// A group is the calls on one bucket under one rule that one script run
// decides, in arrival order: each gets the decision it would have had one by
// one.
type group struct {
	rule  quota.Rule
	key   string
	calls []*call
}

// script returns the script that decides g's calls and its arguments at the
// clock arguments sec and nsec.
func (g *group) script(sec, nsec any) (script, []any) {
	if g.rule.Algorithm == quota.TokenBucket {
		return gcraScript, gcraArgs(g, sec, nsec)
	}
	return fixedScript, fixedArgs(g, sec, nsec)
}

// decide sets the decision of each of g's calls from the script's reply, or
// the error on each.
func (g *group) decide(reply []any, err error) {
	if err == nil {
		if g.rule.Algorithm == quota.TokenBucket {
			err = decideGCRA(g, reply)
		} else {
			err = decideFixed(g, reply)
		}
	}
	if err != nil {
		for _, c := range g.calls {
			c.d, c.err = quota.Decision{}, err
		}
	}
}

// decide decides c in a script run of its own.
func (s *Store) decide(ctx context.Context, c *call) {
	g := group{rule: c.rule, key: c.key, calls: []*call{c}}
	sec, nsec := s.clockArgs()
	sc, args := g.script(sec, nsec)
	g.decide(s.eval(ctx, sc, g.key, args...).Slice())
}

// key returns the key of subject's bucket of rule: Prefix + rule name +
// ":{" + subject + "}:fixed" or ":gcra". The braces make the subject the
// key's hash tag, so Redis Cluster keeps every bucket of one subject in one
// slot; check and New refuse a "{" before it, which would open the tag
// early.
func (s *Store) key(rule quota.Rule, subject string) string {
	suffix := "}:fixed"
	if rule.Algorithm == quota.TokenBucket {
		suffix = "}:gcra"
	}
	return s.prefix + rule.Name + ":{" + subject + suffix
}
