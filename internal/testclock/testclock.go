// Package testclock is the settable clock the tests give to every Now
// field: time moves only when a test moves it, so no test waits on the real
// clock.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time source that tests set and advance. It is safe for
// concurrent use; the zero Clock reads the zero time.
type Clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// New returns a clock reading t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time; pass it as a Config.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t, backwards too.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
