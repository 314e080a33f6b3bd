package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// bufferSize is the size of a connection's read and write buffers: a head
// longer than this goes to net/http.
const bufferSize = 4 << 10

// A conn's states, as Shutdown sees them.
const (
	stateIdle   int32 = iota // waiting for a request
	stateActive              // reading or serving one
	stateClosed              // closed by Shutdown while idle
)

// conn is one connection the engine serves.
type conn struct {
	s     *Server
	nc    net.Conn
	cr    connReader
	br    *bufio.Reader
	bw    *bufio.Writer
	state atomic.Int32
	base  context.Context
	addr  string

	// ownDeadline: the connection's read deadline is the engine's (a
	// header or idle timeout, or the end of a watch), not the handler's;
	// guarded by the current response's wmu while a handler runs.
	ownDeadline bool
	// readAt is the read deadline the engine set last (zero: none). While
	// ownDeadline holds it is the connection's, which lets a wait keep it
	// instead of setting it again: every other setter clears ownDeadline.
	readAt time.Time

	// writeApplied is the connection's write deadline. The request being
	// served sets its own (zero: none), which the connection takes at the
	// next write (see connWriter).
	writeApplied time.Time

	headerUntil time.Time // the header deadline of the head being read, or zero
	lastMethod  string    // of the request served last

	current atomic.Pointer[response] // the request being served

	// The watch's timer is armed while requests are served, and left to
	// run out between them: stopping and resetting it for each request
	// cost a flood of short ones more than a fire every watchAfter does
	// (see watchLate).
	timer *time.Timer
	armed atomic.Bool // the timer will fire, or its function runs
	// lastStart is when the last request began: a request that began
	// watchAfter or more after it stops the timer when it ends.
	lastStart time.Time
	lastEnd   time.Time                // when the last request ended, from which the connection may idle
	seen      atomic.Pointer[response] // the request current when the timer was armed or last fired
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufferSize) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufferSize) }}
)

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc}
	c.cr.nc, c.cr.pending = nc, -1
	c.base = context.WithValue(context.WithValue(context.Background(), http.ServerContextKey, s.HTTP),
		http.LocalAddrContextKey, nc.LocalAddr())
	return c
}

// closeIfIdle closes the connection if it waits for a request; one that
// serves one closes after it.
func (c *conn) closeIfIdle() {
	if c.state.CompareAndSwap(stateIdle, stateClosed) {
		c.nc.Close()
	}
}

func (c *conn) serve() {
	if a := c.nc.RemoteAddr(); a != nil { // as net/http guards it
		c.addr = a.String()
	}
	c.br = readers.Get().(*bufio.Reader)
	c.br.Reset(&c.cr)
	c.bw = writers.Get().(*bufio.Writer)
	c.bw.Reset((*connWriter)(c))
	handedOver := false
	defer func() {
		if c.timer != nil {
			c.timer.Stop()
		}
		c.s.untrack(c)
		if !handedOver {
			c.nc.Close()
			c.br.Reset(nil)
			readers.Put(c.br)
		}
		c.bw.Reset(nil)
		writers.Put(c.bw)
	}()
	for first := true; ; first = false {
		h, w, ok, waiting, err := c.next(first)
		if err != nil {
			return
		}
		if !ok {
			handedOver = true
			c.handOver(waiting)
			return
		}
		c.lastMethod = h.method
		if !c.serveRequest(&h, w) || c.s.shutting.Load() {
			return
		}
		if !c.state.CompareAndSwap(stateActive, stateIdle) {
			return
		}
		if c.s.shutting.Load() { // Shutdown may have passed this connection while it was active
			return
		}
	}
}

// next waits for the next request's head, as net/http's server does: the
// first within the header timeout of the connection's start, every later
// one within the idle timeout of the last answer (up to idleSlack later)
// until its first byte, then within the header timeout. It returns ok false
// when the head is for net/http to read, and an error when the connection
// is done.
func (c *conn) next(first bool) (h head, w *response, ok, waiting bool, err error) {
	timed := false
	if first || (c.br.Buffered() == 0 && c.cr.pending < 0) {
		switch d := c.s.HTTP.IdleTimeout; {
		case first:
			c.headerDeadline()
			timed = true
		case d > 0:
			c.idleDeadline(c.lastEnd.Add(d), d)
		case !c.ownDeadline || !c.readAt.IsZero():
			// No idle timeout: no deadline, set only when the connection
			// holds another (a header deadline, a watch's, a handler's).
			c.setReadDeadline(time.Time{})
		}
		if _, err := c.br.Peek(1); err != nil {
			return head{}, nil, false, false, err
		}
	}
	if !c.state.CompareAndSwap(stateIdle, stateActive) {
		return head{}, nil, false, false, net.ErrClosed
	}
	if c.lastMethod == http.MethodPost {
		// As net/http's server tolerates old clients that end a POST
		// with a CRLF its length does not count.
		peek, _ := c.br.Peek(4)
		_, _ = c.br.Discard(leadingCRorLF(peek))
	}
	for {
		b, _ := c.br.Peek(c.br.Buffered())
		size := headSize(b)
		whole := size >= 0
		if whole {
			w = new(response) // the request's writer, which its head is read into
			if h, ok := parseWhole(b[:size], &w.store); ok {
				if !c.ownDeadline {
					// The last handler's deadline (a hold bound) is not this
					// request's, as net/http lifts it before every request.
					c.setReadDeadline(time.Time{})
				}
				return h, w, true, false, nil // the engine's deadline left for a watch to lift: a bodiless request reads nothing more
			}
		}
		if !first && bytes.HasPrefix(b, []byte("PRI ")) {
			// HTTP/2's preface after a request: net/http takes it only at
			// a connection's start, and would switch protocols mid-stream
			// if handed it as a new connection.
			return head{}, nil, false, false, errPreface
		}
		if !whole && !timed {
			// Before a long head goes to net/http too: it keeps the
			// deadline it began under, which must be its own.
			timed = true
			c.headerDeadline()
		}
		if whole || len(b) == bufferSize {
			return head{}, nil, false, !whole, nil // a whole head the engine does not take, or a long one
		}
		if _, err := c.br.Peek(len(b) + 1); err != nil {
			if len(b) > 0 && !isTimeout(err) {
				return head{}, nil, false, true, nil // net/http answers a head cut short as it does
			}
			return head{}, nil, false, false, err
		}
	}
}

// headerDeadline bounds the reading of a head by the header timeout.
func (c *conn) headerDeadline() {
	var t time.Time
	if d := c.s.HTTP.ReadHeaderTimeout; d > 0 {
		t = time.Now().Add(d)
	}
	c.setReadDeadline(t)
	c.headerUntil = t
}

// setReadDeadline sets a read deadline of the engine's own, which watch
// lifts unless the handler has set one since.
func (c *conn) setReadDeadline(t time.Time) {
	_ = c.nc.SetReadDeadline(t)
	c.ownDeadline, c.readAt = true, t
}

// idleDeadline bounds the wait for the next head by the idle timeout d,
// due after the last answer. A deadline of the engine's that already falls
// at or after due, by at most idleSlack(d), stands: a connection that
// serves requests back to back would otherwise move it, a runtime timer
// and two clock reads, once per request. So an idle connection closes
// between d and d plus the slack after its last answer.
func (c *conn) idleDeadline(due time.Time, d time.Duration) {
	slack := idleSlack(d)
	if c.ownDeadline && !c.readAt.Before(due) && c.readAt.Sub(due) <= slack {
		return
	}
	c.setReadDeadline(due.Add(slack))
}

// idleSlack is how long after the idle timeout d an idle connection may
// stay open: an eighth of d, at most a second.
func idleSlack(d time.Duration) time.Duration { return min(d/8, time.Second) }

// errPreface ends a connection that sends HTTP/2's preface after a request.
var errPreface = errors.New("h1: HTTP/2 preface after a request")

// leadingCRorLF counts the CR and LF bytes b begins with.
func leadingCRorLF(b []byte) int {
	n := 0
	for _, c := range b {
		if c != '\r' && c != '\n' {
			break
		}
		n++
	}
	return n
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// handOver gives the connection, with the bytes read and not yet served, to
// net/http's server. A head the engine was still waiting for keeps the
// engine's header deadline: net/http's first deadline, its own header
// timeout, cannot extend it.
func (c *conn) handOver(waiting bool) {
	cr := c.cr // a copy: net/http's connection keeps nothing else of the engine's
	hc := &handedConn{Conn: c.nc, br: c.br, cr: &cr}
	if !c.writeApplied.IsZero() {
		_ = c.nc.SetWriteDeadline(time.Time{}) // the last request's: net/http sets its own
	}
	if waiting {
		hc.until = c.headerUntil
	} else {
		_ = c.nc.SetReadDeadline(time.Time{}) // net/http sets its own
	}
	c.s.handoff.give(hc)
}

// serveRequest serves one request with w, the writer its head was read
// into, and reports whether the connection may carry another.
func (c *conn) serveRequest(h *head, w *response) (keep bool) {
	w.ctx.Context = c.base
	defer w.cancel()
	proto := http.Request{
		Method: h.method, URL: h.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h.header, Body: http.NoBody, Host: h.host, Close: h.close,
		RemoteAddr: c.addr, RequestURI: h.target,
	}
	r := proto.WithContext(&w.ctx)
	_, _ = c.br.Discard(h.size)
	w.init(c, r)
	c.current.Store(w)
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Hour, c.watchLate)
		c.timer.Stop()
	}
	// With a byte already read ahead there is nothing to watch for, as
	// net/http's background read does not start then.
	if !w.ahead && c.armed.CompareAndSwap(false, true) {
		c.seen.Store(w)
		c.timer.Reset(watchAfter)
	}
	w.start = time.Now()
	sparse := w.start.Sub(c.lastStart) >= watchAfter
	c.lastStart = w.start
	defer func() {
		if err := recover(); err != nil {
			keep = false
			w.done.Store(true) // a stray goroutine's write must not reach the buffer, pooled again
			if w.committed {
				_ = c.bw.Flush() // what the answer had sent on, as net/http's server sends it: cut short
			} else {
				c.bw.Reset((*connWriter)(c)) // a head not yet ended: net/http would have sent none of it
			}
			if err != http.ErrAbortHandler && c.s.HTTP.ErrorLog != nil {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.s.HTTP.ErrorLog.Printf("http: panic serving %v: %v\n%s", c.addr, err, buf)
			}
		}
		w.unwatch()
		c.current.Store(nil) // the request's memory is not the idle connection's
	}()
	c.s.HTTP.Handler.ServeHTTP(w, r)
	if err := w.finish(); err != nil {
		return false
	}
	w.unwatch()
	c.lastEnd = w.now()
	if sparse && c.timer.Stop() {
		// The next request is likely to come after the fire would: a stop
		// costs less than a fire that finds the connection idle.
		c.seen.Store(nil)
		c.armed.Store(false)
	}
	return !w.closeAfter && !w.clientGone()
}
