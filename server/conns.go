package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/clientip"
)

// connLimit caps a listener's open connections, in all and per client. A
// connection over either cap is closed as soon as it is accepted (past the
// total) or as soon as its client is known (past the client's share), so
// idle keep-alive connections cannot exhaust memory (each costs tens of
// kilobytes) and a few addresses cannot take every connection. Clients are
// keyed like the door's peer keys, after the PROXY protocol: the address
// masked to /32 or its IPv6 prefix. Trusted proxies carry many clients' requests,
// so they are exempt from the per-client cap. It is safe for concurrent use.
type connLimit struct {
	net.Listener
	max, perClient int // perClient 0: no per-client cap
	bits6          int
	trusted        func(netip.Addr) bool // peers exempt from the per-client cap; nil: none

	mu     sync.Mutex // guards open and byKey
	open   int
	byKey  map[netip.Prefix]int
	counts *connCounts
}

// connCounts are a listener's figures for metrics.
type connCounts struct {
	open    atomic.Int64
	refused [2]atomic.Int64 // indexed by refusedTotal, refusedClient
}

const (
	refusedTotal  = iota // the listener's cap was reached: --max-conns, --metrics-max-conns
	refusedClient        // the client's: --max-conns-per-client, --metrics-max-conns-per-client
)

// newConnLimit wraps ln; counts receives its figures.
func newConnLimit(ln net.Listener, max, perClient, bits6 int, trusted func(netip.Addr) bool, counts *connCounts) *connLimit {
	return &connLimit{Listener: ln, max: max, perClient: perClient, bits6: bits6, trusted: trusted,
		byKey: make(map[netip.Prefix]int), counts: counts}
}

// Accept returns the next connection within the total cap, closing those
// past it.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.open >= l.max
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
// exempt from the per-client cap.
func (l *connLimit) key(a net.Addr) (netip.Prefix, bool) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || l.perClient == 0 {
		return netip.Prefix{}, false
	}
	ip := tcp.AddrPort().Addr().Unmap().WithZone("")
	if l.trusted != nil && l.trusted(ip) {
		return netip.Prefix{}, false
	}
	bits := 32
	if ip.Is6() {
		bits = l.bits6
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
	l *connLimit

	settle  sync.Once
	key     netip.Prefix
	keyed   bool
	refused bool // past the per-client cap: closed, and reads end at once
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
		if l.byKey[key] >= l.perClient {
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

// registerConns reports the figures of each listener, keyed by its name
// (proxy, metrics), as admit.server.connections (open now) and
// admit.server.connections_refused (by reason: max_conns,
// max_conns_per_client, the listener's own caps), each series carrying the
// listener's name in admit.server.listener.
func registerConns(meter metric.Meter, byListener map[string]*connCounts) (metric.Registration, error) {
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
		counts  *connCounts
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

// listen binds the proxy's and the metrics listeners, each under its own
// connection caps. The proxy's accepts PROXY protocol headers from the
// configured peers.
func (s *server) listen() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("admit: --listen: %w", err)
	}
	mln, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("admit: --metrics-listen: %w", err)
	}
	// Trusted proxies carry clients' requests to the proxy, not scrapes,
	// so none is exempt here. Loopback peers are held to the per-client
	// cap too: exempting them would let one local process take every
	// slot from the address a local Prometheus and probe share, and the
	// default per-client cap leaves those two room (a scraper keeps one
	// connection, two while scrapes overlap; a probe one).
	s.metricsLn = newConnLimit(mln, s.cfg.MetricsMaxConns, s.cfg.MetricsPerClient, 64, nil, &s.metricsConns)
	s.ln = ln
	if len(s.cfg.ProxyProtocolFrom) > 0 {
		s.ln = clientip.ProxyProtocolListener(ln, s.cfg.ProxyProtocolFrom, 0)
	}
	s.ln = newConnLimit(s.ln, s.cfg.MaxConns, s.cfg.MaxConnsPerClient, 64, s.resolver.Trusts, &s.conns)
	return nil
}

// proxyServer is the HTTP server of the proxy's listener.
func (s *server) proxyServer(errorLog *log.Logger) *http.Server {
	srv := &http.Server{
		Handler:           s.handler,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxConcurrentStreams},
		ErrorLog:          errorLog,
	}
	srv.RegisterOnShutdown(func() { close(s.listenerClosed) }) // runs once the listener is closed
	if s.tlsCert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*s.tlsCert}, MinVersion: tls.VersionTLS12}
	}
	if s.cfg.H2C {
		// HTTP/2 with prior knowledge beside HTTP/1.1, under the same
		// header and stream limits as over TLS (MaxHeaderBytes, HTTP2).
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		srv.Protocols = &p
	}
	return srv
}
