// Package pipelisten is a net.Listener of in-memory connections (net.Pipe),
// for tests that serve HTTP inside a testing/synctest bubble, where a
// loopback socket cannot be: a pipe's writes wait until the other end
// reads, and its deadlines follow the bubble's clock. Call New and Dial
// inside the bubble, so that its channels and pipes belong to it.
package pipelisten

import (
	"net"
	"sync"
)

// Listener hands out the server ends of the connections Dial makes.
type Listener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// New returns a listener with no connections yet.
func New() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Dial makes a connection, hands its server end to Accept, and returns its
// client end once Accept has taken it. It panics once the listener is
// closed, rather than wait for an Accept that will not come.
func (l *Listener) Dial() net.Conn {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client
	case <-l.closed:
		panic("pipelisten: Dial on a closed listener")
	}
}

// Accept returns the server end of the next connection Dial makes, or
// net.ErrClosed once the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept return net.ErrClosed; it may be called more than once.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is a loopback address, which servers use only to name the listener.
func (l *Listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
