package upstream

import (
	"context"
	"net"
	"sync"
	"time"
)

// aLongTimeAgo is a deadline that has passed: setting it wakes a read or
// write blocked on the connection at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one connection of the direct path to the upstream. Idle, it holds
// no buffer: the reader that reads its responses is the request's, and a
// connection goes back to the pool only when that reader holds nothing more
// of it.
type conn struct {
	nc        net.Conn
	interrupt func()  // wakes any read or write on nc; bound once, so arming it allocates nothing
	probe     *prober // nil: nothing to peek with
	reused    bool    // it carried a request before this one
	idleSince time.Time
}

func newConn(nc net.Conn) *conn {
	c := &conn{nc: nc, probe: newProber(nc)}
	c.interrupt = func() { _ = c.nc.SetDeadline(aLongTimeAgo) }
	return c
}

// pool keeps idle connections to one upstream address, the most recently
// used first out, so that a quiet period lets the oldest time out. It is
// safe for concurrent use.
type pool struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	addr    string
	maxIdle int
	timeout time.Duration // an idle connection is closed after it

	mu    sync.Mutex // guards the following fields
	idle  []*conn    // oldest first
	timer *time.Timer
	armed bool
}

// get returns an idle connection that is still open and has sent nothing
// unasked, or dials a new one.
func (p *pool) get(ctx context.Context) (*conn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		// Without a goroutine reading each idle connection, a close or
		// stray bytes from the upstream show only when asked.
		if time.Since(c.idleSince) < p.timeout && c.probe.quiet() {
			c.reused = true
			return c, nil
		}
		c.nc.Close()
	}
	nc, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return newConn(nc), nil
}

// put keeps c for another request, or closes it when the pool is full.
func (p *pool) put(c *conn) {
	c.idleSince = time.Now()
	p.mu.Lock()
	if len(p.idle) >= p.maxIdle {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	p.idle = append(p.idle, c)
	if !p.armed {
		p.armed = true
		if p.timer == nil {
			p.timer = time.AfterFunc(p.timeout, p.sweep)
		} else {
			p.timer.Reset(p.timeout)
		}
	}
	p.mu.Unlock()
}

// sweep closes the connections idle for the timeout, and runs again when
// the oldest left would time out.
func (p *pool) sweep() {
	now := time.Now()
	p.mu.Lock()
	i := 0
	for i < len(p.idle) && now.Sub(p.idle[i].idleSince) >= p.timeout {
		i++
	}
	expired := make([]*conn, i)
	copy(expired, p.idle[:i])
	p.idle = append(p.idle[:0], p.idle[i:]...)
	clear(p.idle[len(p.idle):cap(p.idle)])
	p.armed = len(p.idle) > 0
	if p.armed {
		p.timer.Reset(p.timeout - now.Sub(p.idle[0].idleSince))
	}
	p.mu.Unlock()
	for _, c := range expired {
		c.nc.Close()
	}
}

// closeIdle closes every idle connection.
func (p *pool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}
