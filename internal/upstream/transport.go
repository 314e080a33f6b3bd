package upstream

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// MaxIdleConnsPerHost is how many idle connections to the upstream are kept
// for reuse. Go's default of 2 makes a loaded proxy open and close a
// connection for most requests; 256 covers a few hundred concurrent clients.
const MaxIdleConnsPerHost = 256

// MaxResponseHeaderBytes bounds the response heads admit reads from the
// upstream, 1xx heads included: a tenth of net/http's default, and far more
// than any app sends (nginx refuses heads over 4 or 8 KiB by default).
const MaxResponseHeaderBytes = 1 << 20

// Standard returns a new net/http transport with http.DefaultTransport's
// dial and TLS handshake timeouts and HTTP/2 to TLS upstreams, room for
// MaxIdleConnsPerHost idle connections, and no proxy: HTTP_PROXY and its
// kin are meant for a host's outgoing traffic, not for the app behind it.
func Standard() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConns = 4 * MaxIdleConnsPerHost
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	t.IdleConnTimeout = 90 * time.Second
	return t
}

// Client is the transport admit forwards with. As an http.RoundTripper it
// is its Transport, with the rules of RoundTrip on which connections carry
// another request; Direct gives a proxy the direct path to a plain-HTTP
// upstream, which shares the Transport's dialer, idle limits and response
// header bound. It is safe for concurrent use.
type Client struct {
	*http.Transport
	dial func(ctx context.Context, network, addr string) (net.Conn, error) // the Transport's, unwatched

	mu      sync.Mutex // guards directs
	directs []*Direct
}

// Transport returns the client admit forwards with: a Standard transport,
// its response heads bounded by MaxResponseHeaderBytes, its connections
// watched (see watched).
func Transport() *Client {
	t := Standard()
	t.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	c := &Client{Transport: t, dial: t.DialContext}
	t.DialContext = watchDial(c.dial)
	return c
}

// track keeps d, so that CloseIdleConnections reaches its pool.
func (c *Client) track(d *Direct) {
	c.mu.Lock()
	c.directs = append(c.directs, d)
	c.mu.Unlock()
}

// CloseIdleConnections closes the idle connections of the Transport and of
// every direct path.
func (c *Client) CloseIdleConnections() {
	c.Transport.CloseIdleConnections()
	c.mu.Lock()
	directs := c.directs
	c.mu.Unlock()
	for _, d := range directs {
		d.pool.closeIdle()
	}
}
