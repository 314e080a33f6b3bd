package rls

import (
	"context"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
)

// Hit is one addition to a counter. It is the type every store's counter
// takes (memquota.Hit, redisquota.Hit and pgquota.Hit are the same type),
// so their counters are Counters as they are.
type Hit = struct {
	// Key names the counter: the hash of the limit's domain and entries.
	Key string
	// Window is the limit's unit, whole seconds.
	Window time.Duration
	// N is what to add: the descriptor's hits_addend; 0 reads.
	N uint64
	// Count is set by the counter: the window's count after N was added.
	Count uint64
}

// Counter counts hits in fixed windows aligned to the Unix epoch, adding
// every hit whether or not it passes a limit, as envoyproxy/ratelimit's
// Redis cache counts. Count adds each hit's N in order, sets its Count, and
// returns the time it counted by; an error means the store could not count.
// [memquota.Counter], [redisquota.Counter] and [pgquota.Counter] implement
// it.
type Counter interface {
	Count(ctx context.Context, hits []Hit) (time.Time, error)
}

var (
	_ Counter = (*memquota.Counter)(nil)
	_ Counter = (*redisquota.Counter)(nil)
	_ Counter = (*pgquota.Counter)(nil)
)

// Failure is what a descriptor gets while the counter cannot count, or,
// for a token bucket, the limiter cannot decide: [quota.Failure], the one
// failure model of every front. For a [Service] the zero value means
// FailError.
//
// Deprecated: use quota.Failure; Failure is an alias kept so that code
// naming it compiles.
type Failure = quota.Failure

// The policies of [Options].Failure, as admit rls carries them out.
//
// Deprecated: use quota.FailError, quota.FailClosed, quota.FailOpen and
// quota.FailLocal; these are the same values.
const (
	// FailError answers the request with gRPC's UNAVAILABLE, so that
	// Envoy's failure_mode_deny decides, as it does when
	// envoyproxy/ratelimit cannot reach Redis. It is the default.
	FailError = quota.FailError
	// FailClosed answers OVER_LIMIT for every limited descriptor.
	FailClosed = quota.FailClosed
	// FailOpen answers OK for every limited descriptor.
	FailOpen = quota.FailOpen
	// FailLocal counts in this process's memory instead ([Options].Fallback),
	// and decides token buckets in a memory limiter of its own, so each
	// replica enforces the limits on its own until the store is back.
	FailLocal = quota.FailLocal
)

// ParseFailure returns the Failure that String spells s as.
//
// Deprecated: use quota.ParseFailure, which this calls.
func ParseFailure(s string) (Failure, error) { return quota.ParseFailure(s) }

// storeContext is ctx for a call to the counter or the limiter: without
// the caller's cancellation, so that the store's own timeout ends the call
// and its verdict is known. Envoy's rate limit filter gives up after 20 ms
// by default, sooner than the stores' timeouts; a call that ended with its
// caller would tell nothing of the store, and during an outage every call
// would wait for the caller's deadline.
func storeContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
