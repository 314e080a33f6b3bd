package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// maxDirectBody is the largest request body the direct path takes. It reads
// the body whole before it writes the request, so the request goes out in
// one write and can be sent again on a fresh connection; a body this small
// also fits the socket's buffers, so an upstream that answers before
// reading it cannot stall the write. Longer and unsized bodies stream
// through net/http's Transport, which writes and reads at once.
const maxDirectBody = bufferSize

// defaultMaxHeaderBytes bounds a response head, with the 1xx heads before
// it, when the Transport sets no MaxResponseHeaderBytes: net/http's default.
const defaultMaxHeaderBytes = 10 << 20

// readBufferSize is the size of a request's reader of the upstream's
// answer: a head this long is read in place.
const readBufferSize = 4 << 10

// Direct forwards requests to one plain-HTTP upstream over HTTP/1.1
// connections it keeps, in the handler's goroutine: no goroutine per
// connection, no hand-off per request, the request written in one system
// call and the answer's head read into a pooled buffer and handed to the
// client's header map in one allocation. It takes the requests Takes
// accepts; a proxy sends the others through net/http's Transport. It is
// safe for concurrent use.
type Direct struct {
	target  *url.URL
	host    string                                  // the Host header: the target's
	skip    func(r *http.Request, name string) bool // further request headers not to send; nil: none
	maxHead int                                     // bytes of response heads, 1xx ones included
	pool    pool
}

// Direct returns the direct path to target, which skip names request
// headers to leave out of (asked last, of a header the path would send), or nil when target is not a plain http URL the
// direct path can reach (https, which gets HTTP/2 from the Transport, or a
// URL with user information).
func (c *Client) Direct(target *url.URL, skip func(r *http.Request, name string) bool) *Direct {
	if target.Scheme != "http" || target.Host == "" || target.User != nil || target.Opaque != "" {
		return nil
	}
	host, err := httpguts.PunycodeHostPort(target.Host)
	if err != nil || !httpguts.ValidHostHeader(host) {
		return nil
	}
	addr := host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(target.Hostname(), "80")
	}
	dial := c.dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	maxHead := int(c.Transport.MaxResponseHeaderBytes)
	if maxHead <= 0 {
		maxHead = defaultMaxHeaderBytes
	}
	d := &Direct{target: target, host: host, skip: skip, maxHead: maxHead,
		pool: pool{dial: dial, addr: addr, maxIdle: c.Transport.MaxIdleConnsPerHost, timeout: c.Transport.IdleConnTimeout}}
	if d.pool.maxIdle <= 0 {
		d.pool.maxIdle = http.DefaultMaxIdleConnsPerHost
	}
	if d.pool.timeout <= 0 {
		d.pool.timeout = 90 * time.Second
	}
	c.track(d)
	return d
}

// Takes reports whether the direct path can forward r: a body of known
// length up to maxDirectBody, no trailers, no Expect (the Transport waits
// for 100 Continue), and no protocol upgrade (the Transport hands the
// connection over).
func (d *Direct) Takes(r *http.Request) bool {
	return r.ContentLength >= 0 && r.ContentLength <= maxDirectBody && len(r.Trailer) == 0 &&
		r.URL.Opaque == "" && r.Header["Expect"] == nil &&
		!httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade")
}

// exchange is one request's buffers: what it writes, the reader of the
// answer and the parsed header lines. Exchanges are recycled, so the
// direct path allocates little per request.
type exchange struct {
	out    []byte
	br     *bufio.Reader
	fields []field
	spill  []byte // a head longer than br's buffer
}

var exchanges = sync.Pool{New: func() any {
	return &exchange{out: make([]byte, 0, 1<<10), br: bufio.NewReaderSize(nil, readBufferSize)}
}}

// maxPooled bounds the buffers an exchange keeps when it is recycled.
const maxPooled = 64 << 10

func (x *exchange) free() {
	x.br.Reset(nil)
	if cap(x.out) > maxPooled+maxDirectBody || cap(x.spill) > maxPooled {
		return
	}
	x.out, x.fields, x.spill = x.out[:0], x.fields[:0], x.spill[:0]
	exchanges.Put(x)
}

// nothingBackError wraps what failed before the upstream answered anything:
// such a request may be sent again on a fresh connection.
type nothingBackError struct{ err error }

func (e nothingBackError) Error() string { return e.err.Error() }
func (e nothingBackError) Unwrap() error { return e.err }

// errSwitched is the cause when the upstream switches protocols for a
// request that asked for no upgrade.
var errSwitched = errors.New("upstream: 101 Switching Protocols to a request that asked for no upgrade")

// Forward sends r, with the forwarding header fields extra, to the upstream
// and copies the answer to w, as httputil.ReverseProxy does: 1xx answers as
// they come, the header but its hop-by-hop fields, the body, flushed as it
// comes when it is an event stream or of unknown length, and the trailers.
// It returns an error, having written nothing to w but any 1xx answers,
// when no answer came (the proxy answers 502). Once the answer has begun, a
// failure aborts the client's response with http.ErrAbortHandler, so the
// client sees a cut answer and never a whole one.
func (d *Direct) Forward(w http.ResponseWriter, r *http.Request, extra []Field) error {
	x := exchanges.Get().(*exchange)
	defer x.free()
	var err error
	if x.out, err = d.appendRequest(x.out, r, extra); err != nil {
		return err
	}
	ctx := r.Context()
	for attempt := 0; ; attempt++ {
		c, err := d.pool.get(ctx)
		if err != nil {
			return err
		}
		stop := context.AfterFunc(ctx, c.interrupt)
		h, err := d.roundTrip(w, c, x, r.Method)
		if err == nil {
			return d.answer(w, r, c, x, &h, stop)
		}
		stop()
		c.nc.Close()
		if ctx.Err() != nil {
			return fmt.Errorf("upstream: %w", context.Cause(ctx))
		}
		var nothing nothingBackError
		if !errors.As(err, &nothing) || !c.reused || !replayable(r) || attempt >= 2 {
			return err
		}
	}
}

// replayable reports whether r may be sent again after a reused connection
// failed before any answer, as net/http's Transport decides: an idempotent
// method, or an idempotency key. The direct path holds the whole body.
func replayable(r *http.Request) bool {
	switch r.Method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return r.Header["Idempotency-Key"] != nil || r.Header["X-Idempotency-Key"] != nil
}

// roundTrip writes the request on c and reads the final answer's head,
// passing 1xx answers on to w.
func (d *Direct) roundTrip(w http.ResponseWriter, c *conn, x *exchange, method string) (head, error) {
	if _, err := c.nc.Write(x.out); err != nil {
		return head{}, nothingBackError{err}
	}
	x.br.Reset(c.nc)
	limit := d.maxHead
	for informational := 0; ; informational++ {
		s, err := readBlock(x.br, limit, &x.spill)
		if err != nil {
			if informational == 0 && x.br.Buffered() == 0 && (err == io.EOF || isReset(err)) {
				return head{}, nothingBackError{err}
			}
			return head{}, err
		}
		h, err := parseHead(s, x.fields)
		x.fields = h.fields[:0]
		if err != nil {
			return h, err
		}
		switch {
		case h.status == http.StatusSwitchingProtocols:
			return h, errSwitched
		case h.status >= 200:
			return h, nil
		case informational == maxInformational:
			return h, errInformational
		}
		limit -= len(s)
		relay1xx(w, &h)
	}
}

// isReset reports whether err is the upstream resetting the connection.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
