package redisquota

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/admitgo/admit/quota/internal/store"
)

// gcraArgs returns gcra.lua's arguments for g's calls at the clock
// arguments sec and nsec.
func gcraArgs(g *group, sec, nsec any) []any {
	interval := store.Interval(g.rule)
	tolerance := interval * time.Duration(g.rule.BurstOrLimit())
	args := make([]any, 0, 5+len(g.calls))
	args = append(args, sec, nsec, int64(interval), int64(tolerance), ceilMillis(grace(g.rule.Window)))
	for _, c := range g.calls {
		args = append(args, c.n)
	}
	return args
}

// decideGCRA decides g's calls in arrival order from gcra.lua's reply: the
// time it decided by and the bucket's theoretical arrival time before the
// calls, which each call that passes moves on, as it would have one by one.
// The script's count of passed calls must agree.
func decideGCRA(g *group, reply []any) error {
	v, err := integers(reply, 3)
	if err != nil {
		return err
	}
	if len(reply) != 4 {
		return fmt.Errorf("script replied %v, want 3 integers and a tat", reply)
	}
	old, ok := reply[3].(string) // "" for a bucket Redis does not hold
	if !ok {
		return fmt.Errorf("script replied %v, want 3 integers and a tat", reply)
	}
	tat, err := parseTAT(old)
	if err != nil {
		return err
	}
	now, passed := time.Unix(v[0], v[1]), int64(0)
	for _, c := range g.calls {
		c.d, tat = store.GCRADecision(g.rule, now, tat, c.n)
		if c.d.Allowed && c.n > 0 {
			passed++
		}
	}
	if passed != v[2] {
		return fmt.Errorf("the script let %d calls pass where the arithmetic lets %d", v[2], passed)
	}
	return nil
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
