package config

import (
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
)

// LongestWait is the longest a request of a group with a queue waits for
// its token: a key owes at most queue tokens, which refill at the rate.
// 0 for a group without one, or without a rate limit.
func LongestWait(b admit.Budget) time.Duration {
	if b.Queue == 0 || b.Rate == rate.Inf {
		return 0
	}
	return time.Duration(float64(b.Queue) / float64(b.Rate) * float64(time.Second)).Round(time.Millisecond)
}

// DelayText is a group's queue and bound on waiting, as the status page
// adds them to its budget; "" for a group without a queue.
func DelayText(b admit.Budget) string {
	if b.Queue == 0 {
		return ""
	}
	return fmt.Sprintf(", %s %d (the longest wait %s), %s %d", FieldQueue, b.Queue, DurationText(LongestWait(b)), FieldMaxWaiting, b.MaxWaiting)
}
