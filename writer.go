package admit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"
)

// writer records the status a handler answers with, so the door can settle
// the request and count its outcome. It keeps Flush and Unwrap working, so a
// webhook handler can acknowledge early through http.ResponseController and
// keep working.
type writer struct {
	http.ResponseWriter
	status int       // 0 until the handler sends a final status
	hold   time.Time // the hold bound; zero: none
}

// WriteHeader records the first final status; informational 1xx answers other
// than 101 may precede it.
func (w *writer) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes through to the client; http.ResponseController uses it.
func (w *writer) FlushError() error {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements http.Flusher for handlers that assert it directly.
func (w *writer) Flush() { _ = w.FlushError() }

// Hijack hands the connection over, as http.Hijacker does, with the hold
// bound on it: net/http clears a connection's read deadline when it is
// hijacked, so an upgraded connection (a WebSocket) would otherwise outlive
// the bound. Once hijacked, the connection and its deadlines are the
// handler's.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	if !w.hold.IsZero() {
		_ = c.SetDeadline(w.hold)
	}
	return c, brw, nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answered returns the status the client saw: 200 when the handler wrote
// nothing.
func (w *writer) answered() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// deadliner is what a server's ResponseWriter implements to move the
// connection's (or, on HTTP/2, the stream's) deadlines.
type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// findDeadliner walks the Unwrap chain as http.ResponseController does, but
// returns nil rather than building an error when no writer supports
// deadlines, so that case costs nothing per request.
func findDeadliner(w http.ResponseWriter) deadliner {
	for {
		switch t := w.(type) {
		case deadliner:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

// deadlineBody moves the connection's read deadline on once the request body
// has been read to its end, so the body's deadline bounds the body and
// nothing after it: to the hold bound, or to none.
type deadlineBody struct {
	io.ReadCloser
	d      deadliner
	after  time.Time // the hold bound; zero: none
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.d.SetReadDeadline(b.after)
	}
	return n, err
}
