package quota

// Policy is what a store does when it cannot decide: its server is down,
// slower than the store's timeout, or failing. Stores take it as a config
// field (Failure); the zero value is FailClosed.
type Policy uint8

const (
	// FailClosed refuses the call, with RetryAfter set to the rule's window,
	// and returns the store's error. It is the zero value: a limiter that
	// cannot count is not limiting, and the routes it guards matter most when
	// things already go wrong.
	FailClosed Policy = iota
	// FailOpen allows the call, with Remaining set to the rule's limit, and
	// returns the store's error. Choose it where an outage of the store must
	// not take the route down.
	FailOpen
)

// Fail returns the decision a store following p gives for rule when it
// cannot decide, with err. Every store applies its policy through it; a test
// double standing in for a failing store can too.
func (p Policy) Fail(rule Rule, err error) (Decision, error) {
	d := Decision{Limit: rule.Limit, Window: rule.Window}
	if p == FailOpen {
		d.Allowed = true
		d.Remaining = rule.Limit
	} else {
		d.RetryAfter = rule.Window
	}
	return d, err
}
