package redisquota

import (
	"fmt"
	"time"

	"github.com/admitgo/admit/quota/internal/store"
)

// fixedArgs returns fixed.lua's arguments for g's calls at the clock
// arguments sec and nsec.
func fixedArgs(g *group, sec, nsec any) []any {
	w := g.rule.Window
	args := make([]any, 0, 5+len(g.calls))
	args = append(args, sec, nsec, int64(w/time.Second), int64(w%time.Second), ceilMillis(grace(w)))
	for _, c := range g.calls {
		args = append(args, c.n)
	}
	return args
}

// decideFixed decides g's calls in arrival order from fixed.lua's reply:
// the time it decided by and the window's count before the calls, to which
// each call adds its cost, as it would have one by one.
func decideFixed(g *group, reply []any) error {
	v, err := integers(reply, 3)
	if err == nil && len(reply) != 3 {
		err = fmt.Errorf("script replied %v, want 3 integers", reply)
	}
	if err != nil {
		return err
	}
	now, count := time.Unix(v[0], v[1]), v[2]
	for _, c := range g.calls {
		count += int64(c.n)
		c.d = store.FixedWindowDecision(g.rule, now, count, c.n)
	}
	return nil
}

// integers returns the first n elements of a script's reply, which must be
// integers.
func integers(reply []any, n int) ([]int64, error) {
	if len(reply) < n {
		return nil, fmt.Errorf("script replied %v, want %d integers first", reply, n)
	}
	v := make([]int64, n)
	for i := range v {
		x, ok := reply[i].(int64)
		if !ok {
			return nil, fmt.Errorf("script replied %v, want %d integers first", reply, n)
		}
		v[i] = x
	}
	return v, nil
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
