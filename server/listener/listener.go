// Package listener caps the connections a listener keeps open, in all and
// per client, and reports them as metrics.
//
// A connection over either cap is closed as soon as it is accepted (past
// the total) or as soon as its client is known (past the client's share),
// so idle keep-alive connections cannot exhaust memory (each costs tens of
// kilobytes) and a few addresses cannot take every connection. Clients are
// keyed as the door keys peers, after the PROXY protocol when the listener
// below reads it: the address masked to /32, or its IPv6 prefix. A client
// is known on its connection's first RemoteAddr or Read, which an HTTP
// server calls from the connection's own goroutine, so a PROXY protocol
// header that is slow to arrive holds up that connection alone.
package listener

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Caps are the connections a listener keeps open.
type Caps struct {
	// Max is how many connections it keeps open at most; one past it is
	// closed on arrival. It must be at least 1.
	Max int
	// PerClient is how many one client keeps open at most. 0: no cap.
	PerClient int
	// IPv6Bits is the prefix an IPv6 client is keyed by. 0: 64.
	IPv6Bits int
	// Trusted reports the peers exempt from PerClient: proxies that carry
	// many clients' connections. nil: none.
	Trusted func(netip.Addr) bool
}

// Counts are a listener's figures, for Register. The zero Counts is ready.
type Counts struct {
	open    atomic.Int64
	refused [2]atomic.Int64 // indexed by refusedTotal, refusedClient
}

const (
	refusedTotal  = iota // the listener's cap was reached
	refusedClient        // the client's
)

// capped is a listener under its caps. It is safe for concurrent use.
type capped struct {
	net.Listener
	caps Caps

	mu     sync.Mutex // guards open and byKey
	open   int
	byKey  map[netip.Prefix]int
	counts *Counts
}

// Limit returns ln under caps; counts, which may be shared by no other
// listener, receives its figures.
func Limit(ln net.Listener, caps Caps, counts *Counts) net.Listener {
	if caps.IPv6Bits == 0 {
		caps.IPv6Bits = 64
	}
	return &capped{Listener: ln, caps: caps, byKey: make(map[netip.Prefix]int), counts: counts}
}

// Accept returns the next connection within the total cap, closing those
// past it.
func (l *capped) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.open >= l.caps.Max
		if !full {
			l.open++
			l.counts.open.Add(1)
		}
		l.mu.Unlock()
		if full {
			l.counts.refused[refusedTotal].Add(1)
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, l: l}, nil
	}
}

// key returns the per-client key of a peer, and false when the peer is
// exempt from the per-client connection cap.
func (l *capped) key(a net.Addr) (netip.Prefix, bool) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || l.caps.PerClient == 0 {
		return netip.Prefix{}, false
	}
	ip := tcp.AddrPort().Addr().Unmap().WithZone("")
	if l.caps.Trusted != nil && l.caps.Trusted(ip) {
		return netip.Prefix{}, false
	}
	bits := 32
	if ip.Is6() {
		bits = l.caps.IPv6Bits
	}
	p, err := ip.Prefix(bits)
	return p, err == nil
}

// limitedConn counts against its listener's caps until it is closed. Its
// client is known on the first RemoteAddr or Read, which the server calls
// from the connection's own goroutine, so a PROXY protocol header that is
// slow to arrive holds up that connection alone.
type limitedConn struct {
	net.Conn
	l *capped

	settle  sync.Once
	key     netip.Prefix
	keyed   bool
	refused bool // past the per-client connection cap: closed, and reads end at once
	close   sync.Once
}

func (c *limitedConn) admit() {
	c.settle.Do(func() {
		key, ok := c.l.key(c.Conn.RemoteAddr())
		if !ok {
			return
		}
		l := c.l
		l.mu.Lock()
		if l.byKey[key] >= l.caps.PerClient {
			c.refused = true
		} else {
			l.byKey[key]++
			c.key, c.keyed = key, true
		}
		l.mu.Unlock()
		if c.refused {
			l.counts.refused[refusedClient].Add(1)
			c.Conn.Close()
		}
	})
}

func (c *limitedConn) RemoteAddr() net.Addr {
	c.admit()
	return c.Conn.RemoteAddr()
}

func (c *limitedConn) Read(b []byte) (int, error) {
	c.admit()
	if c.refused {
		return 0, net.ErrClosed
	}
	return c.Conn.Read(b)
}

// CloseWrite half-closes the connection when it can be, as net/http's
// server does before it closes one whose request body it left unread, so
// that the close does not reset the connection and destroy the answer.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Close releases the connection's places once, however often it is called.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.close.Do(func() {
		c.settle.Do(func() {}) // a connection closed before it was keyed is never keyed
		l := c.l
		l.mu.Lock()
		l.open--
		if c.keyed {
			if n := l.byKey[c.key] - 1; n > 0 {
				l.byKey[c.key] = n
			} else {
				delete(l.byKey, c.key)
			}
		}
		l.mu.Unlock()
		l.counts.open.Add(-1)
	})
	return err
}

// Register reports the figures of each listener, keyed by its name (the
// server's: proxy, metrics), as admit.server.connections (open now) and
// admit.server.connections_refused (by reason: max_conns for Max,
// max_conns_per_client for PerClient, as the server's flags name them),
// each series carrying the listener's name in admit.server.listener.
func Register(meter metric.Meter, byListener map[string]*Counts) (metric.Registration, error) {
	open, err := meter.Int64ObservableUpDownCounter("admit.server.connections",
		metric.WithDescription("Connections open, by listener: the proxy's or the metrics listener."),
		metric.WithUnit("{connection}"))
	if err != nil {
		return nil, err
	}
	refused, err := meter.Int64ObservableCounter("admit.server.connections_refused",
		metric.WithDescription("Connections closed on arrival because the listener or their client had as many open as allowed."),
		metric.WithUnit("{connection}"))
	if err != nil {
		return nil, err
	}
	type series struct {
		counts  *Counts
		open    []metric.ObserveOption
		reasons [2][]metric.ObserveOption
	}
	var all []series
	for name, cc := range byListener {
		listener := attribute.String("admit.server.listener", name)
		s := series{counts: cc, open: []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(listener))}}
		for i, r := range []string{"max_conns", "max_conns_per_client"} {
			s.reasons[i] = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(listener, attribute.String("admit.server.reason", r)))}
		}
		all = append(all, s)
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range all {
			o.ObserveInt64(open, s.counts.open.Load(), s.open...)
			for i := range s.reasons {
				o.ObserveInt64(refused, s.counts.refused[i].Load(), s.reasons[i]...)
			}
		}
		return nil
	}, open, refused)
}
