package h1

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A Server serves a listener's connections: the requests the engine reads
// itself with HTTP's Handler, in its own loop, and every connection it
// hands over to HTTP, which serves it from then on. It follows HTTP's
// Handler, IdleTimeout, ReadHeaderTimeout and ErrorLog, and stands in the
// requests' contexts under http.ServerContextKey. Serve refuses an HTTP
// that sets what the engine would not follow (ReadTimeout, WriteTimeout,
// ConnState, ConnContext, BaseContext) or has no Handler, so that a
// setting can never hold for half of the requests.
type Server struct {
	HTTP *http.Server

	handoff  *handoffListener
	shutting atomic.Bool
	served   sync.WaitGroup // the engine's connections

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]struct{}
}

// Serve accepts connections on ln until Shutdown or Close, as
// http.Server.Serve does, and returns http.ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	if h := s.HTTP; h.Handler == nil || h.ReadTimeout != 0 || h.WriteTimeout != 0 || h.ConnState != nil ||
		h.ConnContext != nil || h.BaseContext != nil {
		return errors.New("h1: the http.Server sets what the engine does not follow, or has no Handler")
	}
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln, s.conns = ln, make(map[*conn]struct{})
	s.handoff = newHandoffListener(ln.Addr())
	s.mu.Unlock()
	// If net/http stops serving on its own, nothing more is handed to it,
	// and the engine stops too, with its error.
	fallback := make(chan error, 1)
	go func() {
		err := s.HTTP.Serve(s.handoff)
		s.handoff.Close()
		if !errors.Is(err, http.ErrServerClosed) {
			fallback <- err
			ln.Close()
		}
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case ferr := <-fallback:
				return ferr
			default:
			}
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			// As net/http's server does: a temporary error (out of
			// descriptors, say) waits and tries again.
			var ne net.Error
			//lint:ignore SA1019 the test net/http's server makes
			if errors.As(err, &ne) && ne.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			s.handoff.Close()
			return err
		}
		delay = 0
		c := newConn(s, nc)
		if !s.track(c) {
			nc.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

// track adds c to the connections Shutdown closes when idle, unless the
// server is shutting down.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	s.served.Add(1)
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.served.Done()
}

// Shutdown stops accepting, closes idle connections, lets every request
// in progress finish with Connection: close, and shuts HTTP down (running
// its RegisterOnShutdown functions), as http.Server.Shutdown does. It
// returns ctx's error if the connections outlast it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting.Store(true)
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.closeIfIdle()
	}
	handoff := s.handoff
	s.mu.Unlock()
	err := s.HTTP.Shutdown(ctx)
	if handoff != nil {
		handoff.Close()
	}
	done := make(chan struct{})
	go func() { s.served.Wait(); close(done) }()
	select {
	case <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the listener and every connection at once, as
// http.Server.Close does.
func (s *Server) Close() error {
	s.mu.Lock()
	s.shutting.Store(true)
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	handoff := s.handoff
	s.mu.Unlock()
	err := s.HTTP.Close()
	if handoff != nil {
		handoff.Close()
	}
	return err
}

// handoffListener passes the connections the engine hands over to
// net/http's server.
type handoffListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// give hands c to net/http's server, or closes it once that has stopped.
func (l *handoffListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }
