package h1

import (
	"context"
	"sync"
)

// requestContext is a request's context: its connection's, until the
// request ends, a write fails or the client goes away. It is a field of
// the request's writer, where context.WithCancel would cost every request
// two allocations, and it makes its Done channel only when asked, as
// context's own do. It has an AfterFunc method, which the context package
// uses to tell the contexts derived from it (WithCancel, WithTimeout,
// AfterFunc) of its end; without one, each would wait for it in a
// goroutine of its own. A context derived from a context.WithValue of it
// still does, until the request ends, as from any context that is not the
// context package's own: admit's handlers derive theirs from the request's
// context itself.
//
// Its zero value is not usable: serveRequest sets its parent, the
// connection's context, which must hold no context.WithCancel:
// context.Cause would read that one's cause instead of this one's error.
type requestContext struct {
	context.Context // the connection's: its values; no deadline, never done

	mu    sync.Mutex // guards the following
	done  chan struct{}
	err   error
	funcs []afterFunc // to run once done
	next  uint64      // the id of the next afterFunc
}

// afterFunc is a function an AfterFunc registered.
type afterFunc struct {
	id uint64
	f  func()
}

// closed is the Done channel of a context that was done before anyone
// asked for one.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (c *requestContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *requestContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc arranges for f to run once the context is done, and returns
// a function that stops that and reports whether it did, as
// context.AfterFunc does. f runs in a goroutine of its own when the
// context is done already; otherwise cancel calls it, as a
// context.WithCancel cancels its children: the context package registers
// only functions that return at once (a child's cancel, which starts an
// AfterFunc's own function in a goroutine of its own).
func (c *requestContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	id := c.next
	c.next++
	c.funcs = append(c.funcs, afterFunc{id, f})
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, a := range c.funcs {
			if a.id == id {
				c.funcs = append(c.funcs[:i], c.funcs[i+1:]...)
				return true
			}
		}
		return false
	}
}

// cancel ends the context with context.Canceled, once.
func (c *requestContext) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done == nil {
		c.done = closed
	} else {
		close(c.done)
	}
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for _, a := range funcs {
		a.f()
	}
}
