package rls

import (
	"context"

	"github.com/admitgo/admit/quota"
)

// Hit is one addition to a counter: [quota.Hit], whose Key is the hash
// of the limit's domain and entries, N the descriptor's hits_addend and
// Limit its requests_per_unit.
type Hit = quota.Hit

// Counter counts the hits of fixed-window limits: [quota.Counter], which
// the Counters of quota/memquota, quota/redisquota, quota/pgquota and
// quota/memcachequota implement.
type Counter = quota.Counter

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
