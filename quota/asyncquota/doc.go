// Package asyncquota shares a limit across replicas at nearly the cost of
// one process's memory: a [Charger] decides each call from what this
// replica knows of the bucket, and every interval reconciles with a shared
// store (quota/pgquota, quota/redisquota): it sends the cost it admitted
// on every bucket it touched, in round trips of up to 1,000 buckets, and
// takes the buckets' shared state back, with everyone's admissions in it.
// Gubernator's GLOBAL behaviour and Envoy's quota service work the same
// way.
//
// # What it trades
//
// An exact store decides every call atomically, at one round trip's cost
// per batch of calls. The async mode decides at a map lookup's cost, and
// replicas learn of each other's admissions up to two intervals late, so
// together they may admit more than the limit, by at most [Bound]: for
// GCRA, (replicas - 1) x (Burst + Limit x 2 x interval / Window) calls
// over any span; for a fixed window, (replicas - 1) x Limit per window.
// The store counts every admitted call, past the limit too, so a GCRA
// excess is paid back by refusals and the long-run rate holds. One
// replica alone never admits more than the limit. Choose it where a brief
// excess of that size is harmless (link and API budgets) and the store's
// cost per request matters; keep the exact store where every call beyond
// the limit costs (sign-ups, password resets).
//
// # Which calls the store decides
//
// A bucket is decided locally only once a reconcile has brought its
// shared state. Its first calls on this replica, until the next reconcile,
// are decided by the store, exactly, and so are the calls of a bucket
// forgotten to make room: a bucket that returns after it was forgotten
// cannot start afresh. Only admitted calls are counted: a refused call
// costs nothing, in both algorithms.
//
// # Memory
//
// At most Config.MaxKeys buckets are tracked, about 200 bytes each. A new
// bucket takes the place of an idle one (nothing admitted since the last
// reconcile, nothing in flight), probed in random order; when none of
// those probed is idle, the new bucket is not tracked and its calls are
// decided by the store, at its cost. A flood of subjects therefore costs
// the store what it costs without the async mode, and the reconcile sends
// at most MaxKeys buckets, 1,000 per round trip.
//
// # Failures
//
// When a reconcile fails, every call goes to the store until the store
// decides one again, and the store's failure policy (quota.Failure) decides
// it, as it would without the async mode; a door with a local fallback
// then decides by its own share of the budget. The hits of the round trip
// that failed are sent again with the next: the store may then count them
// twice, which refuses sooner and never admits more, where dropping them
// would let a store that fails every reconcile hide each replica's
// admissions from the others. What the replica knows of each bucket is kept,
// and used again once the store answers. Run gives each reconcile a
// deadline of an interval, and at least a second, of its own: it holds up
// no request, so it may take longer than a decision on a loaded store.
//
// # Clock
//
// Decisions are made on the store's clock: each reconcile measures the
// offset between this replica's clock and the store's (at the midpoint of
// the round trip) and local decisions add it, so replicas whose clocks
// disagree still count in the same windows.
//
// # Metrics
//
// admit.quota.async.decisions counts decisions by admit.quota.mode (local,
// store) and admit.quota.outcome; admit.quota.async.reconciles counts
// reconciles by outcome (ok, failed); admit.quota.async.reconcile.buckets
// is the number of buckets each sent; admit.quota.async.overadmission is,
// per reconcile, the most calls one bucket showed admitted beyond its
// limit (for a fixed window counting the store's exact decisions too,
// which count refused calls, so it is an upper estimate); and
// admit.quota.async.keys is the number of buckets tracked.
package asyncquota
