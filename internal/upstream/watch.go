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
// between is answered with those bytes. Client.RoundTrip waits for the
// reader to settle first (settled).
type watched struct {
	net.Conn
	probe *prober // nil: nothing to peek with

	mu     sync.Mutex // guards the following fields
	reads  uint64     // Reads begun
	parked bool       // a Read is under way
	closed bool
	wake   chan struct{} // closed when a Read begins or the connection closes; nil: nobody waits
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

// testHookSettling, when set, runs as settled begins to wait for the
// Transport's reader.
var testHookSettling func()

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

func (w *watched) wakeLocked() {
	if w.wake != nil {
		close(w.wake)
		w.wake = nil
	}
}

// settled waits until the Transport's reader of w waits on the socket, w
// is closed, or done is closed, and reports whether w may carry a request:
// open, the reader waiting (so its buffer holds nothing past the last
// answer) through a peek that finds nothing on the socket either. Bytes
// that come after it returned race the request, as they do on any client.
// One request at a time holds w, so settled never runs twice at once.
func (w *watched) settled(done <-chan struct{}) bool {
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return false
		}
		if w.parked {
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
		wake := w.wake
		w.mu.Unlock()
		if testHookSettling != nil {
			testHookSettling()
		}
		select {
		case <-wake:
		case <-done:
			return false
		}
	}
}
