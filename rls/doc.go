// Package rls is Envoy's rate limit service on admit's stores: it answers
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, the call
// Envoy's HTTP and network rate limit filters make (and Istio, Contour,
// Emissary and Gloo through them), with the configuration files and the
// answers of envoyproxy/ratelimit, the reference implementation.
//
// # Compatibility
//
// [Load] reads envoyproxy/ratelimit's YAML unchanged: a file, or a
// directory of them, one domain each, with nested descriptors, exact and
// "*" wildcard values, share_threshold, rate_limit (every unit it accepts:
// second, minute, hour, day, week, month of 30 days, year of 365),
// unlimited, name and replaces, shadow_mode, quota_mode, detailed_metric
// and value_to_metric. It refuses what the reference refuses, but for the
// keys of admit's one extension (see Extensions), and the error names the
// file, line, column and field.
//
// [Service.ShouldRateLimit] answers what the reference answers for the same
// configuration and sequence of requests, field by field: the overall code;
// per descriptor its code, current_limit, limit_remaining and
// duration_until_reset; hits_addend of the request and of each descriptor;
// a descriptor's own limit; fixed windows aligned to the Unix epoch; the
// most specific match first; replaces, unlimited, shadow and quota mode per
// rule and for the whole service; the limit headers. A differential test
// runs the reference's command beside every store to hold this. Where the
// reference surprises, this package does the same, on purpose:
//
//   - Every hit is counted, over the limit or not, so a caller that keeps
//     calling past its limit stays over it until the window ends.
//   - A count is keyed by the domain and each entry's key and value joined
//     with "_", so key "a_b" and key "a" with value "b" share a count, as
//     they share a descriptor in the file.
//   - Without share_threshold, each value a wildcard matches counts apart.
//   - Under global shadow mode the overall code is OK but descriptors keep
//     OVER_LIMIT; a quota_mode status has no duration_until_reset.
//   - A descriptor's own limit applies in a known domain whatever the file
//     says, and never in shadow mode.
//   - Under [Options].StopIncrementOverLimit (the reference's
//     STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT) a descriptor that passes its
//     limit is still counted; what stops is the counting of the request's
//     other descriptors, which answer by their counts without it. A shadow
//     or quota mode rule past its limit lets such a request through with
//     its other descriptors uncounted.
//   - The local over-limit cache ([Options].LocalCacheBytes, the
//     reference's LOCAL_CACHE_SIZE_IN_BYTES) answers a descriptor the
//     counter found past its limit OVER_LIMIT until its window ends,
//     without counting it: its status has nothing remaining, and its hits
//     are over_limit and over_limit_with_local_cache in the metrics. A
//     shadow_mode rule's descriptors are kept too, and answered OK from
//     it; global shadow mode changes nothing of it. With
//     StopIncrementOverLimit, a request with a descriptor answered from it
//     counts none of its others.
//
// # Differences
//
// A few answers differ where the reference fails: a request with no domain
// or no descriptors is INVALID_ARGUMENT (the reference returns UNKNOWN); a
// descriptor limit with a unit Envoy does not define is INVALID_ARGUMENT
// (it ends the reference's process); a hits_addend past 2^32 counts as
// 2^32, which is over every limit (the reference's Redis fails the call
// past 2^63, which Envoy by default lets through). Counts are kept per limit unit, so
// two limits of different units on one descriptor never share a count (in
// the reference they do during the seconds their windows start together).
//
// # Extensions
//
// One extension of admit's own turns a rule into a token bucket instead
// of a fixed window: "algorithm: token-bucket" in a rate_limit, with an
// optional "burst" (requests_per_unit unless given). The bucket refills
// requests_per_unit tokens a unit, continuously, and holds at most burst;
// a descriptor's hits_addend is its cost, spent when the bucket holds it,
// and otherwise OVER_LIMIT, spending nothing. limit_remaining is the whole
// tokens left, duration_until_reset the seconds until the bucket is full
// again. envoyproxy/ratelimit refuses both keys, so every file it accepts
// means the same here; "algorithm: fixed-window" is its behaviour and the
// default. A descriptor's own limit keeps the fixed window. Failure
// policies, shadow and quota mode, unlimited, replaces, metrics and the
// limit headers apply to token buckets as to windows.
//
// # Stores
//
// A [Counter] ([quota.Counter]) adds hits in fixed windows and returns the
// counts after: [memquota.Counter] (the default),
// [github.com/admitgo/admit/quota/redisquota.Counter] and
// [github.com/admitgo/admit/quota/pgquota.Counter], batched as the quota
// stores batch and aligned to the store's clock. The memory counter is
// bounded by the door's rule: it never forgets a descriptor that reached
// its limit in a live window, so a spray of distinct values cannot reset
// one, and a fresh value's first calls are counted on their own while any
// counter it examines is below its limit (see [memquota.Counter]). This
// package imports quota/memquota for that default, which links no store
// client; it imports neither the Redis nor the PostgreSQL store. Keys are hashed before any store
// sees them ([quota.Subject] of the reference's cache key), so no request
// value is stored. Token buckets are decided by [Options].Limiter, a
// [quota.Charger] (the stores' GCRA, in memory by default), under the same
// hashed keys. [Options].PerSecondCounter, as the reference's
// REDIS_PERSECOND, counts the fixed windows of one second on a store of
// their own, with its own failure state. When a store fails,
// [Options].Failure decides: an error (UNAVAILABLE, so that Envoy's
// failure_mode_deny decides), closed, open, or a local fallback counter
// and limiter.
//
// # Bounds
//
// A request past [MaxRequestBytes], [MaxDescriptors], [MaxEntries],
// [MaxKeyBytes] or [MaxValueBytes] is refused and counted by reason; names
// in metrics that hold request values stop at [MaxMetricLimits].
package rls
