package rls

import (
	"context"
	"fmt"

	"github.com/admitgo/admit/quota"
)

// Hit is one addition to a counter: [quota.Hit], whose Key is the hash
// of the limit's domain and entries, N the descriptor's hits_addend and
// Limit its requests_per_unit.
type Hit = quota.Hit

// Counter counts the hits of fixed-window limits: [quota.Counter], which
// the Counters of quota/memquota, quota/redisquota and quota/pgquota
// implement.
type Counter = quota.Counter

// Failure is what a descriptor gets while the counter cannot count, or,
// for a token bucket, the limiter cannot decide. The zero value is
// FailError.
type Failure uint8

const (
	// FailError answers the request with gRPC's UNAVAILABLE, so that
	// Envoy's failure_mode_deny decides, as it does when
	// envoyproxy/ratelimit cannot reach Redis.
	FailError Failure = iota
	// FailClosed answers OVER_LIMIT for every limited descriptor.
	FailClosed
	// FailOpen answers OK for every limited descriptor.
	FailOpen
	// FailLocal counts in this process's memory instead ([Options].Fallback),
	// and decides token buckets in a memory limiter of its own, so each
	// replica enforces the limits on its own until the store is back.
	FailLocal
)

var failureNames = [...]string{"error", "closed", "open", "local"}

func (f Failure) String() string {
	if int(f) < len(failureNames) {
		return failureNames[f]
	}
	return fmt.Sprintf("Failure(%d)", f)
}

// ParseFailure returns the Failure that String spells s as.
func ParseFailure(s string) (Failure, error) {
	for i, n := range failureNames {
		if s == n {
			return Failure(i), nil
		}
	}
	return 0, fmt.Errorf("rls: store failure %q: want error, closed, open or local", s)
}

// storeContext is ctx for a call to the counter or the limiter: without
// the caller's cancellation, so that the store's own timeout ends the call
// and its verdict is known. Envoy's rate limit filter gives up after 20 ms
// by default, sooner than the stores' timeouts; a call that ended with its
// caller would tell nothing of the store, and during an outage every call
// would wait for the caller's deadline.
func storeContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
