// Package quota is the vocabulary of shared limits: how many requests a
// subject may make per window, counted in one place that every replica of a
// service consults.
//
// A [Rule] names a scope, a limit and a window; a [Limiter] (or a [Charger],
// which can also look and spend more than one) answers each call with a
// [Decision] that always carries the limit, the window and how long to wait.
// Two algorithms are offered:
//
//   - [FixedWindow] counts calls per aligned window. It is one counter per
//     subject and window, cheap to store, and it allows up to twice the limit
//     across a window seam (the end of one window and the start of the next).
//     Refused calls are counted too, so a caller that keeps hammering a limit
//     does not keep its window cheap to probe.
//   - [TokenBucket] is a token bucket kept as one timestamp per subject (the
//     generic cell rate algorithm, GCRA): Limit tokens per Window, refilled
//     continuously, up to Burst. It has no seam burst. Refused calls cost
//     nothing.
//
// Subjects are never raw identifying material: every subject passes through
// [Subject], a truncated SHA-256, and stores refuse anything else with
// [ErrSubject]. A token, an email address or a client IP therefore never
// appears in a shared store or its backups as written. The hash is unkeyed,
// so a subject is a pseudonym, not a secret: a guessable input (any IPv4
// address, most email addresses) can be recovered by hashing guesses, and a
// store's data needs the care of the access logs that hold the same values.
//
// # Failure policy
//
// A store that cannot decide (it is down, slow past its timeout, or answers
// with an error) follows one [Failure], set in its config: [FailClosed] (and
// the zero value, and [FailError] and [FailLocal], which a front carries
// out) refuses the call with RetryAfter set to the rule's window and returns
// the error; [FailOpen] allows it with Remaining set to the limit and
// returns the error. Either way the caller learns that the store failed, and
// the store counts the decision in its metrics. The same type, with the same
// spellings, is the failure policy of the door and of admit rls, which also
// stop asking a store that failed for half a second at a time; a program that
// calls a store directly asks it on every call. A caller error (an invalid
// rule or a subject that did not come from [Subject]) is refused with an
// error whatever the policy. Stores never retry an increment: a retried
// increment could count one call twice.
//
// # Counters
//
// A caller that decides for itself, as admit rls does for
// envoyproxy/ratelimit's fixed windows, counts through a [Counter]: it adds
// each [Hit] to its key's count in the current window and hands back the
// count after. Every store has one, and all take the one Hit type; a Hit's
// Limit tells a bounded counter which counts it must never forget.
//
// # Stores
//
// This package holds no store. The stores live in packages of their own:
// quota/pgquota (PostgreSQL) and quota/redisquota (Redis) share a limit
// across replicas, and quota/memquota keeps it in one process, for tests and
// single-process programs. All of them decide with the same arithmetic and
// pass the same conformance suite, quota/quotatest.
//
// # Exact or async
//
// A shared store decides every call exactly, one round trip per batch of
// calls. quota/asyncquota decides each call from what one replica knows and
// reconciles with the store every interval, through the store's
// [Reconciler] ([Tally] is one bucket's part), at nearly the in-memory
// store's cost and at a bounded, documented excess over the limit.
package quota
