package clientip

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pires/go-proxyproto"
)

// defaultHeaderTimeout is how long a PROXY header may take when
// ProxyProtocolListener is given no timeout.
const defaultHeaderTimeout = 5 * time.Second

// errHeaderNotAllowed refuses a PROXY header from a peer outside from.
var errHeaderNotAllowed = errors.New("clientip: PROXY header from a peer that may not send one")

// ProxyProtocolListener wraps ln for an L4 load balancer that speaks the
// HAProxy PROXY protocol (v1 or v2). A peer inside from must open each
// connection with a header; a peer outside from must not send one and is
// served as itself. The header must arrive within timeout; zero or less
// means 5 s.
//
// A connection whose header is missing, late, malformed or not allowed is
// closed, and its RemoteAddr is a non-IP address, so it can never be keyed
// as the balancer. Otherwise RemoteAddr is the header's source address,
// canonicalised like a peer (unmapped, without zone); a LOCAL header (the
// balancer's own health check) keeps the balancer's address. That address
// is the peer a [Resolver] starts from.
//
// The header is read on the first Read, Write or RemoteAddr of the
// connection, not in Accept, so a slow peer holds up only its own
// connection.
func ProxyProtocolListener(ln net.Listener, from []netip.Prefix, timeout time.Duration) net.Listener {
	if timeout <= 0 {
		timeout = defaultHeaderTimeout
	}
	l := &proxyListener{Listener: ln, timeout: timeout}
	for _, p := range from {
		l.from = append(l.from, unmapPrefix(p))
	}
	return l
}

type proxyListener struct {
	net.Listener
	from    []netip.Prefix
	timeout time.Duration
}

func (l *proxyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &proxyConn{raw: c, allowed: l.allows(c.RemoteAddr())}
	opts := []func(*proxyproto.Conn){proxyproto.SetReadHeaderTimeout(l.timeout)}
	if pc.allowed {
		opts = append(opts, proxyproto.WithPolicy(proxyproto.REQUIRE))
	} else {
		// USE with a validator that always fails, rather than REJECT, so the
		// connection learns that a header was sent and can close itself.
		opts = append(opts, proxyproto.WithPolicy(proxyproto.USE),
			proxyproto.ValidateHeader(func(*proxyproto.Header) error {
				pc.refused.Store(true)
				return errHeaderNotAllowed
			}))
	}
	pc.conn = proxyproto.NewConn(c, opts...)
	return pc, nil
}

// allows reports whether addr is inside from.
func (l *proxyListener) allows(addr net.Addr) bool {
	a, ok := netipAddr(addr)
	if !ok {
		return false
	}
	for _, p := range l.from {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// proxyConn settles its remote address once, closing the connection if the
// header is not acceptable. It is safe for concurrent use.
type proxyConn struct {
	conn    *proxyproto.Conn
	raw     net.Conn
	allowed bool        // the peer is inside from and must send a header
	refused atomic.Bool // a peer outside from sent a header

	once   sync.Once
	remote net.Addr // set by once
}

func (c *proxyConn) settle() {
	c.once.Do(func() {
		h := c.conn.ProxyHeader() // reads the header, nil if it failed
		switch {
		case c.allowed && h == nil, c.refused.Load():
			c.remote = refusedAddr{}
			c.conn.Close()
		case h != nil && !h.Command.IsLocal() && h.SourceAddr != nil:
			c.remote = canonicalNetAddr(h.SourceAddr)
		default:
			c.remote = canonicalNetAddr(c.raw.RemoteAddr())
		}
	})
}

func (c *proxyConn) Read(b []byte) (int, error) {
	c.settle()
	return c.conn.Read(b)
}

func (c *proxyConn) Write(b []byte) (int, error) {
	c.settle()
	return c.conn.Write(b)
}

func (c *proxyConn) RemoteAddr() net.Addr {
	c.settle()
	return c.remote
}

// CloseWrite half-closes the connection, as net/http's server does before
// it closes one whose request body it left unread, so that the close does
// not reset the connection and destroy the answer.
func (c *proxyConn) CloseWrite() error {
	if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *proxyConn) Close() error                       { return c.conn.Close() }
func (c *proxyConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *proxyConn) SetDeadline(t time.Time) error      { return c.conn.SetDeadline(t) }
func (c *proxyConn) SetReadDeadline(t time.Time) error  { return c.conn.SetReadDeadline(t) }
func (c *proxyConn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// refusedAddr is the RemoteAddr of a refused connection. It is not an IP
// address, so a Resolver keys it as NonIPKey, never as the balancer.
type refusedAddr struct{}

func (refusedAddr) Network() string { return "proxyproto" }
func (refusedAddr) String() string  { return "refused" }

// netipAddr returns the canonical IP of a TCP or UDP address.
func netipAddr(addr net.Addr) (netip.Addr, bool) {
	var ap netip.AddrPort
	switch a := addr.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		return netip.Addr{}, false
	}
	ip := ap.Addr().Unmap().WithZone("")
	return ip, ip.IsValid()
}

// canonicalNetAddr unmaps a TCP or UDP address and strips its zone; other
// addresses are returned as they are.
func canonicalNetAddr(addr net.Addr) net.Addr {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return net.TCPAddrFromAddrPort(netip.AddrPortFrom(a.AddrPort().Addr().Unmap().WithZone(""), uint16(a.Port)))
	case *net.UDPAddr:
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(a.AddrPort().Addr().Unmap().WithZone(""), uint16(a.Port)))
	}
	return addr
}
