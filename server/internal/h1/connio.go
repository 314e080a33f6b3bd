package h1

import (
	"bufio"
	"errors"
	"net"
	"time"
)

// The connection as the engine's requests and net/http's server see it:
// writes under the current request's deadline, reads that begin with a byte
// a watch read ahead, and a handed-over connection that replays what the
// engine had buffered.

// connWriter writes to the connection under the current request's write
// deadline, which it sets only when it differs from the connection's: a
// request that sets none, after one that set none, changes nothing, and
// neither does one whose deadline no write reaches. A failed write ends
// the request's context, as it ends net/http's.
type connWriter conn

func (cw *connWriter) Write(p []byte) (int, error) {
	c := (*conn)(cw)
	w := c.current.Load()
	if w == nil {
		return c.nc.Write(p)
	}
	w.wmu.Lock() // a deadline set from another goroutine goes before or after this one, never under it
	if !w.writeAt.Equal(c.writeApplied) {
		if err := c.nc.SetWriteDeadline(w.writeAt); err != nil {
			w.wmu.Unlock()
			w.cancel()
			return 0, err
		}
		c.writeApplied = w.writeAt
	}
	w.writing = true
	w.wmu.Unlock()
	n, err := c.nc.Write(p)
	w.wmu.Lock()
	w.writing = false
	if w.setWhileWriting {
		c.writeApplied, w.setWhileWriting = w.writeAt, false
	}
	w.wmu.Unlock()
	if err != nil {
		w.cancel()
	}
	return n, err
}

// connReader reads the connection, first the byte a watch read ahead.
type connReader struct {
	nc      net.Conn
	pending int // the byte a watch read, or -1
	b       [1]byte
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.pending >= 0 && len(p) > 0 {
		p[0], r.pending = byte(r.pending), -1
		return 1, nil
	}
	return r.nc.Read(p)
}

// handedConn is a connection net/http's server reads from where the
// engine stopped: first what the engine had buffered, then a byte a watch
// read ahead, then the connection.
type handedConn struct {
	net.Conn
	br    *bufio.Reader // nil once drained
	cr    *connReader
	until time.Time // the engine's header deadline for the head in br, or zero
}

func (c *handedConn) Read(p []byte) (int, error) {
	if c.br != nil {
		if c.br.Buffered() > 0 {
			return c.br.Read(p)
		}
		c.br.Reset(nil)
		readers.Put(c.br)
		c.br = nil
	}
	return c.cr.Read(p)
}

// SetReadDeadline clamps net/http's first deadline, the one it reads the
// handed head under, to the engine's.
func (c *handedConn) SetReadDeadline(t time.Time) error {
	if !c.until.IsZero() {
		if t.IsZero() || t.After(c.until) {
			t = c.until
		}
		c.until = time.Time{}
	}
	return c.Conn.SetReadDeadline(t)
}

// CloseWrite half-closes the connection, which net/http's server does
// before it closes one whose request body it left unread: without it the
// close resets the connection, and a reset can destroy the answer before
// the client reads it.
func (c *handedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *handedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}
