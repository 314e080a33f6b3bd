package bench

import (
	"net/http"
	"time"
)

// Limit is the budget every peer enforces per client in one case, each in
// its own terms (a token bucket, a window, GCRA).
type Limit int

const (
	// Ample is about a billion requests a second per client with bursts of
	// 2^30 (or 2^40 requests a minute for window counters): the allowed
	// cases never reach it.
	Ample Limit = iota
	// Tight is one request a minute per client with a burst of one: a
	// client that keeps sending is rejected from its second request on.
	Tight
)

// The figures behind Ample and Tight.
const (
	ampleRate   = 1e9     // tokens a second, for token buckets and GCRA
	ampleBurst  = 1 << 30 // bucket size
	ampleWindow = 1 << 40 // requests a minute, for window counters
	tightPeriod = time.Minute
)

// A Peer is one middleware in the comparison.
type Peer struct {
	// Name is the peer's label in benchmark names, tables and charts.
	Name string
	// Module is the module the peer comes from; bench/go.mod pins its version.
	Module string
	// Setup says how the peer is configured: store, key, headers.
	Setup string
	// Rejects is false for a peer that cannot reject the trivial handler's
	// 200 answers (admit's webhook group charges only 4xx answers); such a
	// peer sits out the rejecting case.
	Rejects bool
	// Bounded is true when the peer's memory stays bounded under rotating
	// addresses by design.
	Bounded bool
	// New wraps next in the peer's middleware at limit l. stop releases what
	// the middleware holds (background goroutines, meter providers); call it
	// once the handler is no longer used.
	New func(next http.Handler, l Limit) (h http.Handler, stop func(), err error)
}

// Peers returns every limiter in the comparison, admit first, in the order
// of tables and charts.
func Peers() []Peer {
	return []Peer{
		admitLink, admitWebhook, httprate, goLimiter, ulule, throttled,
		tollbooth, naive,
	}
}

// Bare is the trivial handler with no limiter: what the workload itself
// costs (the handler, the writer's reset, building the request's address).
var Bare = Peer{
	Name:  "none",
	Setup: "the handler alone, no limiter: the cost of the harness",
	New: func(next http.Handler, _ Limit) (http.Handler, func(), error) {
		return next, func() {}, nil
	},
}
