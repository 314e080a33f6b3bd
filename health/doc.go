// Package health answers health probes from a short cache, so that load
// balancers, orchestrators and floods of probes through them learn the
// server's state without multiplying into load on what the state depends on.
//
// [Cached] wraps any checker of connectrpc.com/grpchealth (the interface behind
// the gRPC health protocol, which Connect and gRPC probes use unchanged): the
// inner checker runs at most once per ttl per service, a refresh in flight is
// shared rather than repeated, and a drain shows at once. [Handler] serves the
// same checker to plain HTTP probes as GET /healthz: 200 when serving, 503
// otherwise, never cacheable. [HTTP] is an inner checker for a server in front
// of an upstream with a health endpoint of its own; for an upstream without
// one, grpchealth.NewStaticChecker answers SERVING while the process runs.
//
// A typical server mounts both views of one cached checker:
//
//	checker := health.Cached(inner, draining.Load, time.Second, nil)
//	mux.Handle("GET /healthz", health.Handler(checker))
//	mux.Handle(grpchealth.NewHandler(checker))
//
// The trade-off is staleness: a change of the inner status shows within one
// ttl, not at once (except a drain, which the cache never hides), and callers
// that arrive while an expired answer is being refreshed get the expired one.
// Memory is bounded by [MaxServices] whatever service names callers send.
package health
