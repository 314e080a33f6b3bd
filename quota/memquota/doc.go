// Package memquota is a [quota.Charger] and a [quota.Counter] that keep
// their state in the memory of one process: for tests, for programs that run
// as a single process, and for admit rls's default store. Memory decides
// rules; Counter counts the fixed windows of quota.Hit for a caller that
// decides (admit rls). Both keep their entries in one bounded table under
// one rule, below.
//
// It shares nothing, so N replicas each with their own store let N times the
// limit through; replicas share a limit through quota/pgquota or
// quota/redisquota instead.
//
// It decides with the same arithmetic as the shared stores and passes the
// same conformance suite (quota/quotatest), so a program tested against it
// sees the decisions a shared store would give. It differs in two places, both
// by design:
//
//   - Memory is bounded, by the door's rule for its client tables: it never
//     forgets a live bucket that reached its limit. A newcomer to a full
//     table takes the place of an expired bucket first, else of the least
//     used bucket below its limit, which lets that subject start afresh
//     (admit.quota.evictions); when every bucket it examines has reached its
//     limit, it decides on its rule's overflow bucket, which all such
//     newcomers share (admit.quota.overflows). A flood of new subjects
//     therefore never resets a spent one, and a fresh subject's first calls
//     are decided on its own bucket while the flood's are below their
//     limits.
//   - A fixed-window bucket keeps only its latest window. When the clock
//     steps back into an earlier window, the store keeps counting in the
//     later one: starting the earlier one afresh would let more calls through
//     than the shared stores, which keep every window. Until the clock is
//     past the seam again, its decisions may differ from theirs.
//
// It is also a [quota.Reconciler], so that tests of replicas deciding on
// their own (quota/asyncquota) can run without a server.
//
// Counter follows the same rule with its hits' Limit: a counter that reached
// it is never forgotten in a live window, nor any live counter whose hits
// gave no Limit, and newcomers that find only such counters share one
// overflow counter per window length.
//
// It never fails, so it has no failure policy: its only errors are caller
// errors, refused as every store refuses them. Decisions are counted in
// admit.quota.decisions and admit.quota.latency with store "memory".
package memquota
