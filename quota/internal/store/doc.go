// Package store holds what every quota store shares and no user needs: the
// arithmetic of both algorithms, the check of a call before it is counted,
// the decision for a refused or failed call, the metrics, and a reference
// model the conformance tests compare stores with.
//
// The arithmetic lives here once so that the in-memory, PostgreSQL and Redis
// stores decide alike: the shared stores only store (one SQL statement, one
// Lua script) and return what they saw, and the decision is made in Go by
// [FixedWindowDecision] or [GCRADecision]. The package imports quota for its
// types, so the stores that use it live in packages of their own.
package store
