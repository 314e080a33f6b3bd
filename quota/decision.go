package quota

import "time"

// Decision is a store's answer to one call. It is a comparable value; the
// zero Decision refuses with no limit, which no store returns.
type Decision struct {
	// Allowed reports whether the call may proceed.
	Allowed bool
	// Remaining is how many more calls would be allowed right now; never
	// negative.
	Remaining int
	// RetryAfter is, for FixedWindow, the time until the window ends (also
	// when allowed); for TokenBucket, the time until the next call would be allowed
	// (0 when it would be now).
	RetryAfter time.Duration
	// Limit and Window echo the rule, so a caller can build response headers
	// from the decision alone.
	Limit  int
	Window time.Duration
}
