// Package memquota is a [quota.Charger] that keeps its buckets in the memory
// of one process: for tests, and for programs that run as a single process.
// It shares nothing, so N replicas each with their own store let N times the
// limit through; replicas share a limit through quota/pgquota or
// quota/redisquota instead.
//
// It decides with the same arithmetic as the shared stores and passes the
// same conformance suite (quota/quotatest), so a program tested against it
// sees the decisions a shared store would give. It differs in two places, both
// by design:
//
//   - Memory is bounded: it tracks limits precisely for the MaxBuckets most
//     recently used buckets. An expired bucket makes room first; only when
//     none has expired is a live one forgotten, which lets its subject start
//     afresh, counted in admit.quota.evictions.
//   - A fixed-window bucket keeps only its latest window. When the clock
//     steps back into an earlier window, the store keeps counting in the
//     later one: starting the earlier one afresh would let more calls through
//     than the shared stores, which keep every window. Until the clock is
//     past the seam again, its decisions may differ from theirs.
//
// It is also a [quota.Reconciler], so that tests of replicas deciding on
// their own (quota/asyncquota) can run without a server.
//
// It never fails, so it has no failure policy: its only errors are caller
// errors, refused as every store refuses them. Decisions are counted in
// admit.quota.decisions and admit.quota.latency with store "memory".
package memquota
