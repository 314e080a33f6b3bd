package asyncquota

import (
	"time"

	"github.com/admitgo/admit/quota"
)

// Bound returns how many calls of cost 1, at most, replicas replicas that
// reconcile every interval may admit together on one bucket of rule beyond
// what one exact store would have admitted, over any span of time:
//
//   - GCRA: (replicas - 1) x (Burst + Limit x 2 x interval / Window),
//     rounded up. Each other replica may spend a full burst from what it
//     last knew, plus what refills while its admissions take up to two
//     intervals to reach this one (one to reach the store, one to come
//     back); the store counts every admitted call, so the excess is paid
//     back by refusals before more pass, and over a long span the rate
//     holds.
//   - FixedWindow: (replicas - 1) x Limit in each window: each replica
//     admits at most Limit in a window, by what it knows.
//
// One replica, or fewer, admits nothing beyond the limit.
func Bound(rule quota.Rule, replicas int, interval time.Duration) int64 {
	if replicas <= 1 {
		return 0
	}
	others := int64(replicas - 1)
	if rule.Algorithm == quota.FixedWindow {
		return others * int64(rule.Limit)
	}
	lag := 2 * interval
	refill := (int64(rule.Limit)*int64(lag) + int64(rule.Window) - 1) / int64(rule.Window)
	return others * (int64(rule.BurstOrLimit()) + refill)
}
