package upstream

import (
	"context"
	"net"
	"sync"
)

// watched is a connection the Transport reads answers from, which knows
// whether the Transport's reader of it waits on the socket: how an idle
// connection with nothing unread looks. net/http reads each idle
// connection and closes one that sends what nobody asked for, but it puts
// a connection back in its pool before its reader looks at what the
// reader holds past the answer, so a request that takes the connection in
// between is answered with those bytes. It also puts one back after an
// answer with no body before Client.RoundTrip has that answer and can
// drop the connection as unfit. So a connection is held from the moment a
// request gets it until its RoundTrip has judged the answer (hold,
// release), and Client.RoundTrip waits for both, the release and the
// reader, before a reused connection carries a request (settled).
type watched struct {
	net.Conn
	probe *prober // nil: nothing to peek with

	mu     sync.Mutex // guards the following fields
	reads  uint64     // Reads begun
	parked bool       // a Read is under way
	held   bool       // a request's RoundTrip has not yet judged its answer
	closed bool
	wake   chan struct{} // closed when a Read begins, the hold ends or the connection closes; nil: nobody waits
}

// watchDial returns dial, its connections watched.
func watchDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watched{Conn: nc, probe: newProber(nc)}, nil
	}
}

// testHookSettling, when set, runs as settled begins to wait: for the
// request before to be done with the connection (held), or for the
// Transport's reader.
var testHookSettling func(held bool)

func (w *watched) Read(p []byte) (int, error) {
	w.mu.Lock()
	w.reads++
	w.parked = true
	w.wakeLocked()
	w.mu.Unlock()
	n, err := w.Conn.Read(p)
	w.mu.Lock()
	w.parked = false
	w.mu.Unlock()
	return n, err
}

func (w *watched) Close() error {
	w.mu.Lock()
	w.closed = true
	w.wakeLocked()
	w.mu.Unlock()
	return w.Conn.Close()
}

// hold notes that a request goes on w, which carries no other until
// release.
func (w *watched) hold() {
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
}

// release ends hold: the request's RoundTrip has its answer, or an error,
// and has closed w when the answer left it unfit.
func (w *watched) release() {
	w.mu.Lock()
	w.held = false
	w.wakeLocked()
	w.mu.Unlock()
}

func (w *watched) wakeLocked() {
	if w.wake != nil {
		close(w.wake)
		w.wake = nil
	}
}

// settled waits until the request before on w is released and the
// Transport's reader of w waits on the socket, w is closed, or done is
// closed, and reports whether w may carry a request: open, released, the
// reader waiting (so its buffer holds nothing past the last answer)
// through a peek that finds nothing on the socket either. Bytes that come
// after it returned race the request, as they do on any client. The
// Transport gives w to one request at a time, so settled never runs twice
// at once. The wait for the release is short and bounded: the request
// before already has its answer, or will have it or an error when its
// context ends, and its RoundTrip releases w either way.
func (w *watched) settled(done <-chan struct{}) bool {
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return false
		}
		if w.parked && !w.held {
			reads := w.reads
			w.mu.Unlock()
			quiet := w.probe.quiet()
			w.mu.Lock()
			still := w.parked && w.reads == reads && !w.closed
			w.mu.Unlock()
			if still {
				return quiet
			}
			continue
		}
		if w.wake == nil {
			w.wake = make(chan struct{})
		}
		wake, held := w.wake, w.held
		w.mu.Unlock()
		if testHookSettling != nil {
			testHookSettling(held)
		}
		select {
		case <-wake:
		case <-done:
			return false
		}
	}
}
