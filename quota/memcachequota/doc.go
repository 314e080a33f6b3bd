// Package memcachequota counts admit rls's fixed windows in memcached, as
// envoyproxy/ratelimit's BACKEND_TYPE=memcache does: a [Counter], the
// [quota.Counter] of every admit store, over memcached's text protocol.
//
// It counts fixed windows only. A token bucket's decision reads and
// writes a bucket in one step, which memcached, without scripts or
// transactions, cannot make atomic; [NoBuckets] stands where the other
// stores' Charger stands and refuses every rule, so that a configuration
// with a token bucket is refused before it is served.
//
// The client is the package's own and speaks three commands, incr, add and
// get: each call runs under its context's deadline, dialling included, and
// a connection is reused only when no byte past its answer had arrived as
// it was read. Bytes a broken server or a man in the middle sends later
// would be read as the next call's answer: the protocol has no way to tell
// them apart, and such a path can forge any count anyway, so memcached
// belongs on a network only admit reaches, as the reference's does. Keys are checked before anything is sent: printable ASCII
// without spaces, at most 250 bytes, so that no byte of a key can end it
// or start a command of its own. admit rls's keys are hashes
// ([quota.Subject]) of the descriptors, never their values.
package memcachequota
