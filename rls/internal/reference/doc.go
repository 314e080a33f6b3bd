// Package reference holds the differential test of package rls against
// envoyproxy/ratelimit, the reference implementation of Envoy's rate limit
// service. It is a module of its own so that admit's module does not
// depend on the reference; the test builds the reference's command from
// the version this module pins and runs it on a private Redis.
// TestReferenceSuite runs the reference's own integration suite against
// the admit binary (testdata/suite is the runner it starts it with).
package reference
