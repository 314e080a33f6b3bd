package redisquota

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// gcra spends n tokens of subject's bucket if it holds them and decides from
// the theoretical arrival time the script found.
func (s *Store) gcra(ctx context.Context, rule quota.Rule, subject string, n int, now time.Time) (quota.Decision, error) {
	key := s.gcraKey(rule, subject)
	interval := store.Interval(rule)
	tolerance := interval * time.Duration(rule.BurstOrLimit())
	old, err := s.run(ctx, gcraScript, key,
		now.Unix(), now.Nanosecond(), int64(interval), int64(tolerance), n,
		ceilMillis(grace(rule.Window))).Text()
	if err != nil {
		return quota.Decision{}, err
	}
	tat, err := parseTAT(old)
	if err != nil {
		return quota.Decision{}, err
	}
	d, _ := store.GCRADecision(rule, now, tat, n)
	return d, nil
}

// parseTAT reads a bucket's theoretical arrival time as the script stores it,
// "<unix seconds>:<nanoseconds>"; "" (a new bucket) is the zero time.
func parseTAT(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	sec, nsec, ok := strings.Cut(v, ":")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	ns, err2 := strconv.ParseInt(nsec, 10, 64)
	if !ok || err1 != nil || err2 != nil || ns < 0 || ns >= 1e9 {
		return time.Time{}, fmt.Errorf("bucket holds %q, want <unix seconds>:<nanoseconds>", v)
	}
	return time.Unix(s, ns), nil
}
