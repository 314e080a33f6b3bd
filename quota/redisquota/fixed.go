package redisquota

import (
	"context"
	"strconv"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// fixedWindow counts n calls in the bucket of subject's current window and
// decides from the count the script returns.
func (s *Store) fixedWindow(ctx context.Context, rule quota.Rule, subject string, n int, now time.Time) (quota.Decision, error) {
	start := store.WindowStart(now, rule.Window)
	key := s.fixedKey(rule, subject, start)
	// The bucket outlives its window by a grace period, so a replica whose
	// clock lags a little still finds the count instead of starting afresh.
	ttl := start.Add(rule.Window).Sub(now) + grace(rule.Window)
	count, err := s.run(ctx, fixedScript, key, n, ceilMillis(ttl)).Int64()
	if err != nil {
		return quota.Decision{}, err
	}
	return store.FixedWindowDecision(rule, now, count, n), nil
}

// fixedKey is the key of subject's bucket of the window starting at start.
func (s *Store) fixedKey(rule quota.Rule, subject string, start time.Time) string {
	return s.prefix + rule.Name + ":" + subject + ":" + strconv.FormatInt(start.UnixMilli(), 10)
}

// gcraKey is the key of subject's GCRA bucket.
func (s *Store) gcraKey(rule quota.Rule, subject string) string {
	return s.prefix + rule.Name + ":" + subject
}

// grace is how long a bucket outlives its window or its refill: the window,
// up to a second.
func grace(window time.Duration) time.Duration {
	return min(window, time.Second)
}

// ceilMillis rounds d up to whole milliseconds, the resolution of Redis
// expiry, and to at least one.
func ceilMillis(d time.Duration) int64 {
	return max(1, int64((d+time.Millisecond-1)/time.Millisecond))
}
