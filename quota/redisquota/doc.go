// Package redisquota is a [quota.Charger] that keeps its counters in Redis, so
// every replica of a service that shares the Redis enforces one limit.
//
// # Scripts
//
// Each decision is one Lua script run on one key, so Redis makes it atomically:
// two replicas racing on a bucket each see a distinct count, and there is no
// read-then-write across the network. The store sends EVALSHA; when Redis
// answers NOSCRIPT (its script cache was flushed, or it restarted or failed
// over) it sends the script's source once with EVAL, which also caches it
// again. That is not a retry: NOSCRIPT means nothing ran. The scripts need
// Redis 6.0 or later (SET KEEPTTL).
//
// The fixed-window script adds the cost to the count of the bucket's current
// window and returns the count before it; the GCRA script reads the bucket's
// theoretical arrival time (tat), stores the new one if the call fits, and
// returns the old one. Both return the time they decided by. The decision
// itself is then made in Go, from what the script returned, by the arithmetic
// every admit store shares, so this store decides exactly as the in-memory
// and PostgreSQL stores do (and passes the same suite, quota/quotatest). A
// cost of 0 (a look) writes nothing. As in the other stores, a refused
// fixed-window call is counted and a refused GCRA call is not.
//
// # Keys and expiry
//
// A fixed-window bucket is Prefix + rule name + ":{" + subject + "}:fixed",
// holding its window's start and count as "<unix seconds>:<nanoseconds>:<count>";
// a GCRA bucket is Prefix + rule name + ":{" + subject + "}:gcra", holding
// the tat as "<unix seconds>:<nanoseconds>". Subjects are the hashes
// [quota.Subject] returns, never raw identifiers. The braces make the subject
// each key's hash tag, so on Redis Cluster every bucket of one subject, under
// every rule and algorithm, lives in one slot: a decision, a refund and the
// calls coalesced into one script run each touch one key, and what one
// subject does never spans masters. Subjects are spread over slots as evenly
// as their hashes. A "{" in Prefix or in a rule name would open the hash tag
// before the subject's (every bucket of a rule in one slot, say), so [New]
// refuses such a Prefix with [ErrConfig] and calls refuse such a rule with
// [quota.ErrRule]; a "}" is harmless.
//
// A fixed-window bucket holds one window: the first call of a later window
// starts it afresh. A clock that steps back into an earlier window (an
// injected one, or a server's after a failover) counts on in the later window
// the bucket holds, as the in-memory store does, rather than admit more than
// the limit; a refund gives back only to the window that is current.
//
// Every bucket expires (SET PX): a fixed window at the window's end, a GCRA
// bucket when it is full again, when it decides like a missing one. Both live
// a grace of min(Window, 1s) longer, so a replica whose injected clock lags a
// little still finds the count instead of starting afresh. Expiry is in whole
// milliseconds, rounded up. Memory is therefore bounded by the subjects active
// within about one window.
//
// # Clock
//
// With [Config].Now nil, the default, each script reads the Redis server's
// clock (TIME) and returns it with what it found, and Go decides by that
// time: every replica of a service counts in the same windows and shares a
// GCRA bucket as one clock would, however far its own clock is off. Scripts
// are replicated by their effects, so a Redis replica never reads its own
// clock. A store given Config.Now (tests do) sends its time with each call
// instead; then replicas' clocks must agree to well within a window.
//
// Lua numbers are doubles, exact only for integers below 2^53, and
// nanoseconds since 1970 are beyond that, so times travel and are stored as
// whole seconds and nanoseconds, and only spans below 2^53ns are computed in
// nanoseconds; nothing is rounded. This sets limits, checked before each
// call and refused as caller errors wrapping [quota.ErrRule]: a fixed window of
// at least a millisecond (the resolution of expiry) and, unless it is whole
// seconds, below 2^52ns (about 52 days); and a GCRA tolerance plus cost
// (interval x (burst + n)) below 2^53ns, about 104 days.
//
// # Failure policy
//
// A call Redis cannot answer within [Config].Timeout (default 100ms), or
// answers with an error, follows [Config].Failure, a [quota.Failure]:
// [quota.FailClosed] by default (refused, RetryAfter = Window), or
// [quota.FailOpen] (allowed, Remaining = Limit); either way the error is
// returned and the decision counted in admit.quota.decisions as
// failed_closed or failed_open. A
// caller error (an invalid rule, a subject that did not come from
// [quota.Subject]) is refused with an error whatever the policy, and Redis is
// not contacted.
//
// After an outage, decisions may keep failing for up to about a second once
// Redis answers again: after PoolSize failed dials in a row, go-redis stops
// dialling and fails calls that need a new connection with the last dial
// error until a background probe, run once a second, connects.
//
// The store never sends a script twice for one call. The client must not
// either: go-redis retries a command after some network errors by default,
// and an EVALSHA retried after Redis ran it would count the call twice. So
// the client must have MaxRetries -1 (and a cluster client MaxRedirects -1,
// since it re-sends a command after a dropped connection up to MaxRedirects
// times), and ContextTimeoutEnabled so that Timeout also bounds the socket
// reads; [New] checks these where it can. Without redirects, a call that
// meets a slot migration (MOVED) fails and follows the failure policy.
//
// # Batching and coalescing
//
// A decision holds one connection for one round trip, so unbatched callers
// need as many connections (go-redis's PoolSize) to proceed in parallel, and
// even then Redis spends most of its time on per-command network overhead.
// With [Config].Batch above 1 the store sends concurrent decisions together:
// a flusher goroutine takes the queued calls, up to Batch, and sends them in
// one pipeline; calls that arrive meanwhile queue up and leave together in
// the next. Calls of one pipeline on the same bucket under the same rule are
// coalesced: one script run takes their costs in arrival order and returns
// the state before them and the time, from which Go decides each call as it
// would have been decided alone, one after the other; the GCRA script also
// returns how many calls it let pass, and a disagreement with the arithmetic
// fails the calls. So a hot key costs Redis one script run per pipeline
// rather than one per call. A lone call leaves at once, in a pipeline of one;
// under load the pipelines fill up, which multiplies throughput at high
// concurrency (see scripts/bench-redis) at the cost of a goroutine handoff
// per call. The calls of one pipeline are decided at one time: the injected
// clock's, read once, or each script's reading of the server's. A caller
// still waits no longer than Timeout, without a timer of its own: the
// flusher answers the calls whose timeout has passed by the failure policy
// without sending them, and bounds each pipeline by the earliest deadline
// among its calls. Refunds are sent on their own.
// go-redis's own autopipeliner is not used for this: it does not give up on
// a call when the call's context ends, so a stalled Redis would stall every
// caller past Timeout.
//
// With [Config].OneServer, for a client that reaches one Redis server
// itself (a *redis.Client, a failover client too, not a proxy that routes
// commands by key), the script runs of a pipeline, and of a reconcile, go
// as one run of batch.lua per 64 buckets. It holds the buckets' own
// scripts and runs each on its own key with the batch's one clock reading,
// so Redis parses one command, sets up Lua and reads its clock once rather
// than once per bucket: BenchmarkReconcile measured almost half less of
// Redis's CPU per reconciled bucket, BenchmarkAllow a sixth less per
// decision on distinct keys (both report it as redis-µs, with one=true and one=false
// side by side). A pipeline of one bucket runs that bucket's script
// alone. A run that fails (a key of the wrong type) fails alone, as in a
// pipeline: the batch script catches its error, which that bucket's calls
// get, and runs the others. It is off by default: behind a proxy that routes a script
// by its first key (twemproxy, Envoy's redis_proxy), one script run would
// count every bucket of its batch on that key's server.
//
// # Reconcile
//
// [Store.Reconcile] adds the hits that replicas deciding on their own
// (quota/asyncquota) admitted, without deciding them, and reports each
// bucket's state: one script run per bucket in one pipeline (batched by 64
// with OneServer, as above), fixed.lua with the hits as one cost, or
// gcra_add.lua, which moves the tat to max(tat, now) + hits x interval,
// past the burst if it must.
//
// # Cluster and Sentinel
//
// The client may be a *redis.ClusterClient (Redis Cluster) or a failover
// client from redis.NewFailoverClient (a master and its replicas watched by
// Redis Sentinel), as well as a *redis.Client or a *redis.Ring, each set up as
// above; [New] checks what it can see. A failover client is a *redis.Client
// carrying the FailoverOptions' settings; redis.NewFailoverClusterClient
// returns a cluster client, whose MaxRedirects follows its MaxRetries. Every
// script declares the one key it touches, hash-tagged by its subject (see
// Keys), so a cluster sends each call, and each coalesced group of a
// pipeline, to the master of one slot; go-redis splits a pipeline by master.
// Scripts write, so they must reach masters: a failover client must not be
// ReplicaOnly.
//
// After a master crashes, go-redis's cluster client keeps sending its slots
// to the dead address until it reloads its slot map, which it does by itself
// only on a MOVED reply or once a minute (ClusterStateReloadInterval); a
// refused connection does not prompt it. So after a failed call on a cluster
// client the store asks it to reload (ReloadState), at most once a second:
// calls on the crashed master's slots fail until a replica has taken over,
// and for about a second more. A failover client asks the sentinels for the
// master whenever it opens a connection and drops its connections when they
// announce a new one; it too decides again about a second after the
// failover, once go-redis's dial probe connects, as after any outage.
//
// # Failover
//
// What a failover costs, and what it does not:
//
//   - From the crash until the client reaches the new master, every call on
//     the crashed master's slots follows the failure policy within Timeout.
//     On a cluster with cluster-require-full-coverage yes (Redis's default)
//     the other masters too answer CLUSTERDOWN, and calls on their slots
//     fail, from when the cluster marks the master failed until a replica
//     has taken over (about a second in the tests); set it to no to keep
//     them serving. A batched pipeline is answered when its slowest master
//     answers, so calls that share one with the crashed master's wait for
//     it, up to Timeout.
//   - A call that failed may or may not have been counted: the script may
//     have run before the connection broke. The store never sends it again,
//     so no call is counted twice.
//   - Replication is asynchronous: the new master has only what the old one
//     had sent it before the crash, so the last writes the old master made,
//     already acknowledged as decisions, may be lost. Those calls are then
//     not counted, and as many more may pass. Only WAIT after every call, a
//     round trip to a replica per decision, would narrow that gap; the store
//     does not use it.
//   - The new master decides by its own clock, so masters' clocks should
//     agree (NTP). If the clocks differ, windows end that much earlier or
//     later (a bucket a lagging clock finds in a later window counts on in
//     it), and GCRA buckets gain or lose that much refill.
//   - Its script cache may be empty: the first call of each script gets
//     NOSCRIPT and sends the source, which is not a retry.
//
// The failover tests crash the master serving a hot bucket under load and
// check exactly this: every failed call failed closed within Timeout, the
// store decided again within two seconds of the failover (within one in
// every run so far), and the bucket's count read from the new master is at
// most the calls allowed plus those that failed, and at least the calls
// allowed after the crash. Calls allowed before it may be missing from the
// count; the tests log how many.
package redisquota
