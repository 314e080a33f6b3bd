// Package quota decides shared limits: how many requests a subject may make per
// window, counted in one place that every replica of a service consults.
//
// A [Rule] names a scope, a limit and a window; a [Limiter] answers each call with
// a [Decision] that always carries the limit, the window and how long to wait.
// Two algorithms are offered:
//
//   - [FixedWindow] counts calls per aligned window. It is one counter per
//     subject and window, cheap to store, and it allows up to twice the limit
//     across a window seam (the end of one window and the start of the next).
//     Refused calls are counted too, so a caller that keeps hammering a limit
//     does not keep its window cheap to probe.
//   - [GCRA] (the generic cell rate algorithm) is a token bucket kept as one
//     timestamp per subject: Limit tokens per Window, refilled continuously, up
//     to Burst. It has no seam burst. Refused calls cost nothing.
//
// Subjects are never raw identifying material: every subject passes through
// [Subject], a truncated SHA-256, and stores refuse anything else with
// [ErrSubject]. A token, an email address or a client IP therefore never
// reaches a shared store or its backups.
//
// # Failure policy
//
// A store that cannot decide (it is down, slow past its timeout, or answers
// with an error) follows one policy, chosen per store: fail closed (the
// default) refuses the call with RetryAfter set to the rule's window and
// returns the error; fail open allows it with Remaining set to the limit and
// returns the error. Either way the caller learns that the store failed, and
// the decision is counted (see [Metrics]). A caller error (an invalid rule or a
// subject that did not come from [Subject]) is refused with an error whatever
// the policy. Stores never retry an increment: a retried increment could count
// one call twice.
//
// This package holds the types shared by every store, the in-memory store, and
// the arithmetic each algorithm follows; the PostgreSQL and Redis stores live in
// the subpackages pgquota and redisquota.
package quota
