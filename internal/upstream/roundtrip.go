package upstream

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
)

// RoundTrip sends req through the Transport and drops the HTTP/1
// connection its answer came on when the answer leaves it unfit for
// another request (unfit), or when more than maxInformational 1xx answers
// come, which fails the request. It asks the upstream to close after a
// HEAD on HTTP/1, so that the Transport keeps no such connection at all;
// after a 204 or 304 that frames a body the Transport has put the
// connection back by the time the answer is here, so it is closed then.
// A request that took the connection in between waits until it is (see
// watched), then fails before anything is written and is sent again on
// another connection when it can be. Before a reused connection carries
// a request, RoundTrip also waits until the Transport's reader of it
// waits for bytes with nothing unread, or has closed it for what came
// unasked.
func (c *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	g := &guard{done: req.Context().Done(), head: req.Method == "HEAD"}
	defer g.end()
	out := req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn:        g.gotConn,
		Got1xxResponse: g.got1xx,
	}))
	g.out = out
	if g.head && req.URL.Scheme == "http" {
		// Over TLS the answer may come over HTTP/2, whose framing needs
		// no close and whose connection carries other requests: gotConn
		// asks once it knows.
		out.Close = true
	}
	resp, err := c.Transport.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if testHookAnswered != nil {
		testHookAnswered()
	}
	if nc := g.http1(); nc != nil && resp.ProtoMajor == 1 &&
		unfit(req.Method, resp.StatusCode, headerLength(resp.Header), len(resp.TransferEncoding) > 0) != "" {
		nc.Close()
	}
	return resp, nil
}

// testHookAnswered, when set, runs in RoundTrip as the Transport's answer
// is in, before its connection is judged.
var testHookAnswered func()

// headerLength returns an answer's Content-Length, -1 when it gives none,
// and 1 when net/http kept one it does not read as a length.
func headerLength(h http.Header) int64 {
	v := h["Content-Length"]
	if len(v) == 0 {
		return -1
	}
	if n, ok := parseLength(textproto.TrimString(v[0])); ok {
		return n
	}
	return 1
}

// guard is one request's view of the HTTP/1 connection it went on.
type guard struct {
	done <-chan struct{} // the request's context's
	head bool            // the request is a HEAD
	out  *http.Request   // what RoundTrip hands the Transport

	mu   sync.Mutex // guards the following fields
	conn net.Conn   // the connection the request went on; nil: HTTP/2, or none yet
	held *watched   // the connection under conn, while the request holds it
	over bool       // RoundTrip has returned: nothing is held any more
	n1xx int
}

// gotConn notes the connection, and when it is reused, waits until it may
// carry the request; if it may not, it closes it, so that the request
// fails before anything is written and goes on another connection. The
// request holds the connection until RoundTrip releases it. A HEAD asks
// the upstream to close: the Transport calls gotConn for HTTP/1 before it
// writes the request, in the goroutine that runs RoundTrip.
func (g *guard) gotConn(info httptrace.GotConnInfo) {
	w := watchedOf(info.Conn)
	if w == nil {
		return // HTTP/2, or a connection the Client did not dial
	}
	g.release() // a request sent again holds only its last connection
	g.mu.Lock()
	g.conn = info.Conn
	g.mu.Unlock()
	if info.Reused && !w.settled(g.done) {
		info.Conn.Close()
		return
	}
	g.mu.Lock()
	if !g.over {
		w.hold()
		g.held = w
	}
	g.mu.Unlock()
	if g.head {
		g.out.Close = true
	}
}

// release lets the connection the request holds carry another.
func (g *guard) release() {
	g.mu.Lock()
	w := g.held
	g.held = nil
	g.mu.Unlock()
	if w != nil {
		w.release()
	}
}

// end releases the connection as RoundTrip returns, and makes sure no
// later use of the request's trace holds one again, which nothing would
// release.
func (g *guard) end() {
	g.mu.Lock()
	g.over = true
	g.mu.Unlock()
	g.release()
}

// got1xx counts the 1xx answers; past maxInformational it closes the
// connection, which fails the request: the hook's own error would be lost
// when another trace (httputil.ReverseProxy's) has the hook too.
func (g *guard) got1xx(int, textproto.MIMEHeader) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n1xx++; g.n1xx > maxInformational && g.conn != nil {
		g.conn.Close()
		return errInformational
	}
	return nil
}

func (g *guard) http1() net.Conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conn
}

// watchedOf returns the watched connection under nc, when nc carries
// HTTP/1: a connection the Client's dialer made, bare or in TLS.
func watchedOf(nc net.Conn) *watched {
	switch c := nc.(type) {
	case *watched:
		return c
	case *tls.Conn:
		if c.ConnectionState().NegotiatedProtocol == "h2" {
			return nil
		}
		w, _ := c.NetConn().(*watched)
		return w
	}
	return nil
}
