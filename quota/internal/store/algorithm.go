package store

import (
	"time"

	"github.com/admitgo/admit/quota"
)

// This file holds the arithmetic every store follows, so the in-memory store,
// PostgreSQL and Redis decide alike. Stores that decide elsewhere (SQL, Lua)
// mirror these functions and are tested against them.

// WindowStart returns the start of the fixed window that holds now: now
// truncated to a multiple of window since the Unix epoch. Every replica with a
// close enough clock agrees on it without coordinating.
func WindowStart(now time.Time, window time.Duration) time.Time {
	ns := now.UnixNano()
	start := ns - ns%int64(window)
	if ns < 0 && ns%int64(window) != 0 {
		start -= int64(window)
	}
	return time.Unix(0, start)
}

// FixedWindowDecision builds the decision for a fixed-window bucket whose
// count, after adding this call's cost n, is count. With n = 0 (a look) it
// reports whether one more call would be allowed.
func FixedWindowDecision(rule quota.Rule, now time.Time, count int64, n int) quota.Decision {
	end := WindowStart(now, rule.Window).Add(rule.Window)
	allowed := count <= int64(rule.Limit)
	if n == 0 {
		allowed = count < int64(rule.Limit)
	}
	return quota.Decision{
		Allowed:    allowed,
		Remaining:  int(max(0, int64(rule.Limit)-count)),
		RetryAfter: end.Sub(now),
		Limit:      rule.Limit,
		Window:     rule.Window,
	}
}

// Interval returns a GCRA rule's emission interval: the time one token takes
// to refill, Window / Limit, at least 1ns.
func Interval(rule quota.Rule) time.Duration {
	return max(rule.Window/time.Duration(rule.Limit), 1)
}

// GCRADecision applies a call of cost n at now to a GCRA bucket whose
// theoretical arrival time is tat (the zero time for a new bucket). It returns
// the decision and the tat to store: the new one when the call is allowed and
// n > 0, tat unchanged otherwise. A bucket whose tat is at or before now is
// full and decides like a new one, so a store may forget it after that.
func GCRADecision(rule quota.Rule, now, tat time.Time, n int) (quota.Decision, time.Time) {
	interval := Interval(rule)
	tolerance := interval * time.Duration(rule.BurstOrLimit())
	base := tat
	if base.Before(now) {
		base = now
	}
	cost := n
	if cost == 0 {
		cost = 1 // a look asks whether one call would pass
	}
	next := base.Add(interval * time.Duration(cost))
	allowAt := next.Add(-tolerance)
	d := quota.Decision{Limit: rule.Limit, Window: rule.Window}
	if allowAt.After(now) {
		d.RetryAfter = allowAt.Sub(now)
		d.Remaining = remaining(now, base, tolerance, interval)
		return d, tat
	}
	d.Allowed = true
	if n == 0 {
		d.Remaining = remaining(now, base, tolerance, interval)
		return d, tat
	}
	d.Remaining = remaining(now, next, tolerance, interval)
	// The next call of cost 1 passes once next+interval-tolerance is reached.
	d.RetryAfter = max(0, next.Add(interval-tolerance).Sub(now))
	return d, next
}

// remaining counts the whole tokens a bucket with theoretical arrival time tat
// holds at now.
func remaining(now, tat time.Time, tolerance, interval time.Duration) int {
	free := tolerance - tat.Sub(now)
	if free <= 0 {
		return 0
	}
	return int(free / interval)
}
