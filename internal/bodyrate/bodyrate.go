// Package bodyrate is the one rule for a request body that arrives slowly:
// a deadline for the whole body and a minimum average rate after a grace,
// enforced through the read deadline of the connection (or, on HTTP/2, of
// the stream), so that a read blocked on a client that sends nothing is
// cut when the rule says, without a timer of its own. The door reads every
// admitted body through it, and the proxy's read of a form body for
// "_method" does too.
//
// The rate is Apache mod_reqtimeout's: after the grace, each MinRate bytes
// received buy one more second, so the body is judged by its average since
// it began, never over less than the grace. A sender that stalls for a
// lost round-trip spends credit it earned before; a sender that drips a
// byte at a time is cut when the grace ends.
package bodyrate

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Rule is how slowly a body may arrive. The zero Rule sets no bound.
type Rule struct {
	// Timeout bounds the whole body, from its start. 0: none.
	Timeout time.Duration
	// MinRate is the least average rate, in bytes a second, the body must
	// keep once Grace has passed. 0: none.
	MinRate int64
	// Grace is how long the body may take before MinRate applies.
	Grace time.Duration
}

// IsZero reports whether r bounds nothing.
func (r Rule) IsZero() bool { return r.Timeout <= 0 && r.MinRate <= 0 }

// Deadliner moves the read deadline of a connection, or of an HTTP/2
// stream, as http.ResponseController does.
type Deadliner interface {
	SetReadDeadline(time.Time) error
}

// Why a body was cut, as the status that says so.
const (
	// Slow: the body broke its Rule (408 Request Timeout).
	Slow = http.StatusRequestTimeout
	// Short: the body ended before the length it declared, or its client
	// went away (400 Bad Request).
	Short = http.StatusBadRequest
)

// Reader reads a body under a Rule. It is not safe for concurrent use, as
// a request body is not.
type Reader struct {
	body io.ReadCloser
	d    Deadliner
	rule Rule
	now  func() time.Time
	// bound is a deadline the body may not pass whatever the rule (the
	// door's hold bound), and after is the read deadline once the body has
	// ended; zero: none.
	bound, after time.Time
	start        time.Time // zero until the body starts
	hard         time.Time // start + Timeout, or bound; zero: none
	n            int64     // bytes read
	cut          int       // 0, Slow or Short
	done         bool
}

// NewReader returns a Reader of body under rule, moving d's read deadline;
// bound, when not zero, is a deadline no read may pass, and after is the
// read deadline to leave once the body has ended (zero: none). now is the
// clock (nil: time.Now). With wait the body starts at the first Read, as
// it does for a request with "Expect: 100-continue", whose client sends it
// once the server's 100 has reached it, which the server sends at that
// Read; otherwise it starts now.
func NewReader(body io.ReadCloser, d Deadliner, rule Rule, bound, after time.Time, wait bool, now func() time.Time) *Reader {
	r := &Reader{}
	r.Reset(body, d, rule, bound, after, wait, now)
	return r
}

// Reset makes r a new Reader, as NewReader describes, reusing its memory.
func (r *Reader) Reset(body io.ReadCloser, d Deadliner, rule Rule, bound, after time.Time, wait bool, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	*r = Reader{body: body, d: d, rule: rule, now: now, bound: bound, after: after}
	if wait {
		_ = d.SetReadDeadline(bound)
		return
	}
	r.begin()
}

// begin starts the body's clock and sets the first deadline.
func (r *Reader) begin() {
	r.start = r.now()
	r.hard = r.bound
	if r.rule.Timeout > 0 {
		if end := r.start.Add(r.rule.Timeout); r.hard.IsZero() || end.Before(r.hard) {
			r.hard = end
		}
	}
	_ = r.d.SetReadDeadline(r.Deadline())
}

// Deadline returns when the body is cut unless more of it arrives: the
// earlier of its hard deadline and the end of its rate credit; zero for
// none, or before it starts.
func (r *Reader) Deadline() time.Time {
	if r.start.IsZero() {
		return time.Time{}
	}
	d := r.hard
	if r.rule.MinRate > 0 {
		credit := r.rule.Grace + time.Duration(float64(r.n)/float64(r.rule.MinRate)*float64(time.Second))
		if c := r.start.Add(credit); d.IsZero() || c.Before(d) {
			d = c
		}
	}
	return d
}

// Read reads from the body and moves the read deadline on by the credit
// the bytes bought; once the body has ended it leaves the after deadline. A
// read that fails for the deadline, or on a body cut short, records why.
func (r *Reader) Read(p []byte) (int, error) {
	if r.start.IsZero() && !r.done {
		r.begin()
	}
	n, err := r.body.Read(p)
	r.n += int64(n)
	switch {
	case r.done:
	case err == io.EOF:
		r.end()
	case err != nil:
		// The deadline stays where it cut the body, so that a server
		// that would drain the rest of it after the answer gives up at
		// once.
		r.done = true
		r.cut = classify(err)
	case n > 0 && r.rule.MinRate > 0:
		_ = r.d.SetReadDeadline(r.Deadline())
	}
	return n, err
}

// end leaves the read deadline to what follows the body.
func (r *Reader) end() {
	r.done = true
	_ = r.d.SetReadDeadline(r.after)
}

// Close closes the body.
func (r *Reader) Close() error { return r.body.Close() }

// Cut returns why the body was cut: Slow, Short, or 0 when it was not
// (read whole, not yet, or refused for its size, which is no cut).
func (r *Reader) Cut() int { return r.cut }

// Done reports whether the body has ended, or failed; until then the read
// deadline is the rule's.
func (r *Reader) Done() bool { return r.done }

// Len returns how many bytes have been read.
func (r *Reader) Len() int64 { return r.n }

// classify returns why a read failed: Slow for a deadline, Short for a
// body that ended early or a client gone, 0 for a body over its cap.
func classify(err error) int {
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		return 0
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Slow
	}
	return Short
}
