// Package pgquota is a [quota.Charger] that keeps its buckets in PostgreSQL,
// so every replica of a service that shares the database shares one limit.
//
// # Decisions
//
// The database decides every call atomically: two replicas racing on a
// bucket serialise on its primary key and each sees the other's effect.
// Nothing is read first and written later, and no statement is ever retried,
// so a call is counted at most once.
//
//   - A fixed-window call is an INSERT ... ON CONFLICT DO UPDATE that adds the
//     call's cost to the row of (bucket, window start) and returns the new
//     count. Refused calls are counted too, so a caller hammering a limit
//     cannot probe it for free; the price is that such a caller stays refused
//     until the window ends. A fixed window lets up to twice the limit through
//     across a window seam.
//   - A GCRA call is one INSERT ... ON CONFLICT DO UPDATE that moves the
//     bucket's theoretical arrival time (tat) only when the call is allowed,
//     and reports whether it was. A refused call leaves the tat as it was.
//   - A look (AllowN with n = 0) is a plain SELECT and writes nothing.
//
// The decision returned is made in Go, from the row the statement saw, by the
// arithmetic every admit store shares, so this store, the in-memory store and
// the Redis store decide alike (and pass the same suite, quota/quotatest).
//
// # Batching
//
// With Config.Batch above 1, concurrent calls wait for the store's flusher,
// which takes every call queued (up to Batch) and decides them in one round
// trip and one commit, one batch at a time, so that calls arriving while a
// batch is in flight fill the next: one statement per kind of work
// (fixed-window counts, fixed-window looks, GCRA calls, GCRA looks), each
// taking its buckets as arrays through unnest, pipelined in one implicit
// transaction. Calls on one bucket are coalesced into one row update: a fixed
// window adds their summed cost; a GCRA statement computes in closed form how
// many of a run of calls of one cost pass. The store then replays each call in
// arrival order on the row's state before the batch, so each gets the decision
// it would have had alone, and checks that the statement agrees. A GCRA bucket
// with calls of different costs in one batch takes a second round trip for the
// calls from the first change of cost on, so that every statement locks its
// rows in bucket order and two batches cannot deadlock. A lone call finds the
// flusher idle and leaves at once; batching costs it a goroutine handoff. A
// batching store must be closed with [Store.Close].
//
// A batched call has no timer of its own: the flusher answers the calls
// whose timeout has passed by the failure policy without sending them, and
// bounds each batch by the earliest deadline among its calls.
//
// # Commits
//
// Each batch is one commit, and by PostgreSQL's default each commit waits
// until its WAL is on disk. Sessions with synchronous_commit off (ALTER ROLE
// ... SET synchronous_commit = off, or the parameter in the pool's URL) do
// not wait: in BenchmarkAllow that took 30 to 60 % off PostgreSQL's CPU per
// decision and half the latency, at the price of the last commits, up to
// three times wal_writer_delay, should the database crash, and of the
// standby's wait under synchronous replication. The store leaves the
// choice to the pool; docs/quota.md weighs it.
//
// # Reconcile
//
// [Store.Reconcile] adds the hits that replicas deciding on their own
// (quota/asyncquota) admitted, without deciding them, and reports each
// bucket's state, in one round trip: fixed-window hits through the same
// statement as a batch's counts, GCRA hits through one that moves the tat
// to max(tat, now) + hits x interval, past the burst if it must.
//
// # Clock
//
// With Config.Now nil, the store decides by the database's clock (now(),
// the start of the batch's transaction), so replicas whose clocks disagree
// still count in the same windows and share a GCRA bucket as one clock
// would. An injected Config.Now (tests) is sent with each batch instead.
//
// # Schema
//
// One table (see schema.sql, [Store.Schema] and [Store.Migrate]) holds both
// algorithms. Its primary key is (bucket, window_start), where bucket is the
// rule's name, a colon and the subject. Fixed-window rows have one row per
// bucket and window; GCRA rows have one row per bucket with window_start fixed
// at '-infinity', which no fixed window can start at, and keep their tat in
// nanoseconds in a column of their own. Keeping both in one table keeps one
// sweep, one index and one set of grants.
//
// Each row has expires_at, after which it decides like a missing row: the
// window's end, or for GCRA a time at or after the tat. [Store.Sweep] deletes
// expired rows in bounded batches through an index on expires_at. Updates
// leave expires_at alone (GCRA moves it at most once per burst period or per
// minute, whichever is longer), and the table's fillfactor leaves room on
// each page, so updates are HOT: they touch no index.
//
// # Failure policy
//
// A statement that fails or outlasts Config.Timeout follows Config.Failure, a
// [quota.Failure]: [quota.FailClosed] by default (refused, RetryAfter the
// rule's window, and the error), or [quota.FailOpen] (allowed, Remaining the
// limit, and the error).
// Caller errors (an invalid rule, a subject that did not come from
// [quota.Subject]) are refused whatever the policy. Decisions are counted in
// admit.quota.decisions and admit.quota.latency with store "postgres".
package pgquota
