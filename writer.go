package admit

import (
	"bufio"
	"net"
	"net/http"
	"time"

	"github.com/admitgo/admit/internal/bodyrate"
)

// writer records the status a handler answers with, so the door can settle
// the request and count its outcome. It keeps Flush and Unwrap working, so a
// webhook handler can acknowledge early through http.ResponseController and
// keep working.
type writer struct {
	http.ResponseWriter
	status int              // 0 until the handler sends a final status
	hold   time.Time        // the hold bound; zero: none
	body   *bodyrate.Reader // the body's reader; nil: the body is read without its rule
	// fields, when set, adds the rate-limit fields of tickets and verdicts
	// as the answer's head goes out, so that the answer's own win.
	fields   *handler
	tickets  []ticket
	verdicts []verdict
}

// addFields adds the rate-limit fields once, before the answer's head.
func (w *writer) addFields() {
	if w.fields != nil {
		w.fields.addFields(w.ResponseWriter.Header(), w.tickets, w.verdicts)
		w.fields = nil
	}
}

// cut returns why the request's body was cut, a 4xx status, or 0 when it
// was not (see bodyrate.Reader.Cut).
func (w *writer) cut() int {
	if w.body == nil {
		return 0
	}
	return w.body.Cut()
}

// WriteHeader records the first final status; informational 1xx answers other
// than 101 may precede it.
func (w *writer) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.addFields()
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.addFields()
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// FlushError flushes through to the client; http.ResponseController uses it.
func (w *writer) FlushError() error {
	if w.status == 0 {
		w.addFields()
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
