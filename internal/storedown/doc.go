// Package storedown holds the one rule by which every front of admit stops
// asking a shared store that failed: the door's groups with a local
// fallback and the rate limit service alike.
//
// A store that is down, or black-holed, costs every call that asks it the
// store's timeout. After a failure, then, no call asks it for a while: the
// calls already in flight fail by their own timeouts, one call per
// [Every] probes the store, and the rest go straight to the front's
// failure policy. The first answer sends every call back to the store.
//
// The trade-off: for up to [Every] after it recovers, a store is not asked,
// and each front of each replica finds out on its own.
package storedown
