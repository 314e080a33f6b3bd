package quota

import "fmt"

// Failure is what a limit's callers get while its shared store cannot
// decide: the server is down, slower than the store's timeout, or failing.
// It is the one failure model of every front: the stores (their Config's
// Failure), the door (admit.Budget's Failure), admit rls (rls.Options's
// Failure) and the flags --store-fail of the proxy and of admit rls all take
// it, spelled as [Failure.String] spells it and read by [ParseFailure].
//
// The zero value, [FailDefault], means the front's documented default:
// closed for a store and for the door (or local where the door's budget
// sets Replicas), error for admit rls. [Failure.Or] resolves it.
type Failure uint8

const (
	// FailDefault is the zero value: the front's default (see [Failure]).
	FailDefault Failure = iota
	// FailError hands the decision back to the front's caller with an
	// error: admit rls answers gRPC's UNAVAILABLE, so that Envoy's
	// failure_mode_deny decides, as it does when envoyproxy/ratelimit
	// cannot reach Redis. A front that is itself the last one to decide,
	// as the proxy is, refuses it. A store under it decides as under
	// FailClosed and returns its error.
	FailError
	// FailClosed refuses the call: a store with RetryAfter set to the
	// rule's window and its error, the door with 503 and Retry-After: 1,
	// admit rls with OVER_LIMIT. A limiter that cannot count is not
	// limiting, and the routes it guards matter most when things already
	// go wrong.
	FailClosed
	// FailOpen allows the call: a store with Remaining set to the rule's
	// limit and its error, the door admitting the request uncounted, admit
	// rls answering OK. Choose it where an outage of the store must not
	// take the route down.
	FailOpen
	// FailLocal decides in this process's memory while the store fails:
	// the door by its own buckets at the budget divided by the number of
	// replicas, admit rls by counters and buckets of its own, so that each
	// replica enforces its share until the store is back. A store under it
	// decides as under FailClosed and returns its error; the front does the
	// rest.
	FailLocal
)

// Policy is the former name of [Failure].
//
// Deprecated: use Failure; Policy is an alias kept so that code naming it
// compiles.
type Policy = Failure

var failureNames = [...]string{FailDefault: "default", FailError: "error", FailClosed: "closed", FailOpen: "open", FailLocal: "local"}

// String returns f's spelling: error, closed, open or local, and "default"
// for the zero value, which no flag spells.
func (f Failure) String() string {
	if int(f) < len(failureNames) {
		return failureNames[f]
	}
	return fmt.Sprintf("Failure(%d)", f)
}

// ParseFailure returns the Failure that String spells s as: error, closed,
// open or local.
func ParseFailure(s string) (Failure, error) {
	for f := FailError; int(f) < len(failureNames); f++ {
		if s == f.String() {
			return f, nil
		}
	}
	return FailDefault, fmt.Errorf("quota: store failure %q: want error, closed, open or local", s)
}

// Valid reports whether f is one of the constants above.
func (f Failure) Valid() bool { return int(f) < len(failureNames) }

// Or returns f, or def when f is the zero value: a front resolves its
// default with it.
func (f Failure) Or(def Failure) Failure {
	if f == FailDefault {
		return def
	}
	return f
}

// Fail returns the decision a store following f gives for rule when it
// cannot decide, with err: allowed with the rule's limit remaining under
// FailOpen, refused with RetryAfter the rule's window under every other
// Failure. Every store applies its policy through it; a test double
// standing in for a failing store can too.
func (f Failure) Fail(rule Rule, err error) (Decision, error) {
	d := Decision{Limit: rule.Limit, Window: rule.Window}
	if f == FailOpen {
		d.Allowed = true
		d.Remaining = rule.Limit
	} else {
		d.RetryAfter = rule.Window
	}
	return d, err
}
