package store

import (
	"time"

	"github.com/admitgo/admit/quota"
)

// CheckTallies validates the tallies of a reconcile before a store counts
// any: each one's rule, hits and subject, and that no bucket appears twice,
// which one statement could not update twice. check is the store's own
// check of a call of cost n.
func CheckTallies(tallies []quota.Tally, check func(rule quota.Rule, subject string, n int) error) error {
	type bucket struct {
		name, subject string
		alg           quota.Algorithm
	}
	seen := make(map[bucket]struct{}, len(tallies))
	for i := range tallies {
		t := &tallies[i]
		if err := check(t.Rule, t.Subject, t.Hits); err != nil {
			return err
		}
		k := bucket{t.Rule.Name, t.Subject, t.Rule.Algorithm}
		if _, dup := seen[k]; dup {
			return &quota.RuleError{Rule: t.Rule.Name, Reason: "one bucket twice in one reconcile"}
		}
		seen[k] = struct{}{}
	}
	return nil
}

// AddGCRA returns the theoretical arrival time of a GCRA bucket whose tat
// was tat after hits calls' cost were added at now without deciding them:
// max(tat, now) + hits x interval, or tat itself for no hits. It may pass
// now + tolerance: the bucket then refuses until the excess is paid back.
func AddGCRA(rule quota.Rule, now, tat time.Time, hits int) time.Time {
	if hits == 0 {
		return tat
	}
	base := tat
	if base.Before(now) {
		base = now
	}
	return base.Add(Interval(rule) * time.Duration(hits))
}
