package h1

import (
	"time"
)

// watchAfter is how long a request runs, at least, before the engine
// watches its client, as net/http's server does from a request's start:
// most answers (a refusal, a 404, a quick upstream's) come sooner and are
// spared the watch's goroutine and deadline changes, and a client that
// goes away while its request waits longer, or streams, is noticed within
// twice this.
const watchAfter = 10 * time.Millisecond

// watchLate is the timer's function. A request current when the timer was
// armed, or current at two fires in a row, has run watchAfter: it is
// watched, and the timer is done with it. A request that began since is
// looked at on the next fire. With no request to look at, the timer is
// left unarmed, and the next request arms it. So a connection that serves
// a stream of short requests costs a fire every watchAfter, not a timer
// reset and stop for each request.
func (c *conn) watchLate() {
	w := c.current.Load()
	if w != nil && (w.ahead || c.seen.Load() == w) {
		w.watch()
		w.timed.Store(true)
	}
	if w != nil && !w.timed.Load() {
		c.seen.Store(w)
		c.timer.Reset(watchAfter)
		return
	}
	c.seen.Store(nil) // the request's memory is not the idle connection's
	c.armed.Store(false)
	// A request that began after the first load found the timer armed,
	// and left it to this fire.
	if w := c.current.Load(); w != nil && !w.ahead && !w.timed.Load() && c.armed.CompareAndSwap(false, true) {
		c.seen.Store(w)
		c.timer.Reset(watchAfter)
	}
}

// watch reads one byte ahead on the connection, as net/http's background
// read does: the end of the connection, or its read deadline (one the
// handler set: a body deadline, a hold bound), cancels the request; a byte
// (a pipelined request) is kept for the next head.
func (w *response) watch() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.watching || w.unwatched || w.ahead {
		return
	}
	w.watching = true
	c := w.c
	switch {
	case w.readSet: // the handler's, held until now
		_ = c.nc.SetReadDeadline(w.readAt)
		c.ownDeadline = false
	case c.ownDeadline:
		// The header or idle timeout the head was read under would end a
		// request that waits longer.
		_ = c.nc.SetReadDeadline(time.Time{})
		c.ownDeadline = false
	}
	done := make(chan struct{})
	w.watched = done
	cr := &c.cr
	go func() {
		defer close(done)
		n, err := cr.nc.Read(cr.b[:])
		if n == 1 {
			cr.pending = int(cr.b[0])
		}
		if err != nil && !(w.aborting.Load() && isTimeout(err)) {
			w.readErr = err
			w.cancel()
		}
	}()
}

// aLongTimeAgo is a deadline that has passed: it wakes a pending read.
var aLongTimeAgo = time.Unix(1, 0)

// unwatch ends the request's watch, or forbids it, once the handler has
// returned; a watch's read ends with a read deadline in the past.
func (w *response) unwatch() {
	w.wmu.Lock()
	if w.unwatched {
		w.wmu.Unlock()
		return
	}
	w.unwatched = true
	watching := w.watching
	w.wmu.Unlock()
	if !watching {
		return
	}
	w.aborting.Store(true)
	_ = w.c.nc.SetReadDeadline(aLongTimeAgo)
	<-w.watched
	w.c.ownDeadline, w.c.readAt = true, aLongTimeAgo // lifted by the next watch, or moved on by the next wait
}

// clientGone reports whether the watch saw the connection end.
func (w *response) clientGone() bool { return w.readErr != nil }
