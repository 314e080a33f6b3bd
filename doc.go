// Package admit is the door of a service's anonymous routes: it decides, per
// request and before the handler runs, whether a client may come in.
//
// Routes are wired to a [Group] (webhook, link, health, or your own), each with
// a [Budget], through [Door.Wrap] or, in middleware chains such as chi's
// r.With, [Door.Middleware]. [New] makes a door from a [Config], whose zero
// value enforces [DefaultBudgets] on the TCP peer's address:
//
//	door, err := admit.New(admit.Config{})
//	if err != nil {
//		log.Fatal(err)
//	}
//	mux.Handle("POST /hooks/github", door.Wrap(admit.GroupWebhook, hooks, nil))
//	mux.Handle("GET /s/{token}", door.Wrap(admit.GroupLink, links, nil))
//
// What a group enforces:
//
//   - Token buckets per client, refilled continuously at Rate up to Burst. A
//     request spends one token on entry, or, for a ChargeOnFailure group such
//     as signed webhooks, only when the handler answers 4xx: a provider that
//     delivers a burst of valid events is never dropped, while a caller with
//     bad signatures pays for each attempt.
//   - In-flight caps, a client cap and a group cap on the requests admitted
//     and not yet answered, so a client that opens many slow requests is
//     stopped as surely as one that sends many fast ones.
//   - A read deadline and a size cap for request bodies.
//
// A request over budget gets 503 with Retry-After: 1 when its group is at its
// group cap, 429 with Retry-After: 1 when its client is at its client cap,
// and 429 with
// Retry-After set to the whole seconds until a token frees when it has no
// token; the last also carries the group's rate-limit fields (the IETF
// draft's RateLimit-Policy and RateLimit, or with Budget.XRateLimit
// go-chi/httprate's X-RateLimit-Limit, -Remaining and -Reset), which
// Budget.FieldsOnAdmitted adds to admitted answers too. A group may answer
// them with another status (Budget.RefusalStatus), a body of its own, HTML or
// an RFC 9457 problem document, made from admit's values alone so that
// nothing a client sent is reflected (Budget.RefusalBody, RefusalType), and
// extra header fields (Budget.RefusalHeaders). An overflow handler
// can serve such requests instead (the server serves a cached health status
// to probes that way).
//
// # Bounded memory
//
// Each group keeps its client buckets in an LRU table of MaxClients entries:
// it tracks limits precisely for the most recently seen clients. Tables of
// 1,024 entries or more are split into 16 shards by a hash of the key, seeded
// at random per group. A newcomer that finds its shard full probes the
// shard's 8 oldest entries and takes over the first one whose bucket is full
// and whose client has nothing in flight (an entry in that state decides
// exactly as a fresh one would); probed entries that do not qualify move to
// the front. When none qualifies, the newcomer spends from the group's shared
// bucket under the same caps. Memory therefore stays bounded whatever the
// number of source addresses, and an attacker who wants to pin the table
// must keep every entry drained: Rate x MaxClients requests a second, since
// the random seed keeps anyone from aiming at one shard.
//
// # Client keys
//
// The key of a request is, by default, its TCP peer masked to /32 for IPv4 and
// /64 for IPv6. Behind proxies, use package clientip: it reads forwarding
// headers only from the proxies you list.
//
// A group may instead key by a header, a path value, one global key, or a
// key function of the app's (Key.Func: a user id from the request's
// context, as go-chi/httprate's WithKeyFuncs); each value is hashed before
// any table, store, log line or metric sees it, and counts in the same
// bounded table.
//
// A Budget names only what it changes: a zero field keeps the group's
// default ([DefaultBudgets]).
//
// # Exemptions
//
// Budget.Exempt lists client prefixes and Budget.ExemptKeys hashed keys
// (of an authenticated key) that pass a group without spending its tokens
// or taking from its client cap, as nginx's geo and map: a monitoring network, a
// partner's token. The prefixes match the client key
// Config.Key resolves, so a forwarding header names an exempt client only
// when a trusted proxy sent it. An exempt request still takes a slot of the
// group cap, which protects the app, and counts as outcome
// exempted.
//
// # Waiting for a token
//
// A group with a Budget.Queue delays instead of refusing, as nginx's
// limit_req burst without nodelay: a request of a key that has spent its
// Burst reserves its token on arrival, the key's bucket going into debt
// by at most Queue tokens (as x/time/rate's Reserve does), and waits
// until the bucket has refilled to it, then goes in at the rate. nginx's
// burst=N without nodelay is Burst 1 and Queue N; burst=N delay=M is
// Burst M+1 and Queue N-M. While it waits a request holds none of its
// limits' in-flight slots (the limits of its route before the one it
// waits for give back what they took, and admit it again after the wait),
// and nothing of its body has been read. The longest wait is Queue/Rate.
// A request past its key's queue, or past the group's Budget.MaxWaiting
// requests waiting at once, is refused as without a queue, rate_limited
// with Retry-After: when a retry is let into the queue, or, past the
// group's bound, when its token is there. A request whose context ends
// while it waits (its client went away) gives its token back and counts
// as delay_abandoned; one that waited counts as delayed, whatever its
// answer. Waiting requests count against MaxWaiting alone, so their
// memory stays bounded under a flood however many keys send it; clients
// on the group's shared bucket never wait. Shadow mode never delays: a
// request that would have waited goes in at once, spends what it would
// have reserved, and counts as would_delayed. Config.Waited hears each
// wait, for an access log.
//
// # Shadow mode and metrics
//
// With Config.Shadow the same arithmetic runs but nothing is rejected: a
// request that would have been rejected proceeds without taking a slot or a
// token, and counts as would_rate_limited, would_client_concurrency,
// would_group_concurrency or, for a request its limit cannot key,
// would_missing_key. Every request counts exactly one outcome in the
// OpenTelemetry counter admit.door.requests: ok, client_error, server_error
// (admitted, by the class of the answer), rate_limited, client_concurrency,
// group_concurrency, cached (served by an overflow handler), store_error,
// fallback, missing_key (no value to key the request by), body_cut (admitted,
// and its body cut for its rate or deadline, or cut short: the client's
// failure, whatever it was answered), exempted (admitted without spending,
// see Exemptions), delayed and delay_abandoned (see Waiting for a token),
// or a would_* form. The door also reports admit.door.inflight,
// admit.door.waiting, admit.door.clients and admit.door.evictions. Attributes are the group
// (admit.door.group) and the outcome (admit.door.outcome) only, never a
// client key.
//
// The admitted path allocates nothing for a request without a body, and one
// http.MaxBytesReader for a request with one (and, on a route with
// Route.Buffer, the memory its body arrives into).
//
// # Shared stores
//
// A Budget with a Store decides client tokens in a shared quota store (see
// package quota), so several replicas enforce one budget; in-flight caps stay
// per process. Each group picks its engine once, in New: the door's own
// buckets, or the store. A store failure follows Budget.Failure, one
// quota.Failure: closed and open count as store_error; under local (or with
// Budget.Replicas alone) each replica decides by its own buckets at its
// share of the budget (the budget divided by Replicas) and counts what they
// admit as fallback. Under every policy the door probes a failed store
// twice a second until it answers, and asks it for nothing in between.
//
// # Refused budgets and routes
//
// New, Door.Reload and Door.Handler check every budget and route once,
// before any request: a field's value, fields that do not make one budget,
// a rule the store could not enforce, a route that costs more than a limit
// ever holds (its Burst, its shared bucket, a replica's share on the
// fallback), and a route whose every limit is keyed by a value the client
// chooses. A refusal is a [*BudgetError], read with errors.As: the group,
// the route, the field at fault, and the reason, which Error writes with
// Go's names and InWords with a front's (the admit server's config file
// spells Burst as burst and Replicas as --replicas), so a front that reads
// budgets from a format of its own words the door's check in that format's
// terms instead of checking again.
package admit
