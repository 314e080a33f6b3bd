package server

import (
	"hash/maphash"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/admitgo/admit/internal/answer"
)

// exchange is one request as the access log measures it: when admit had
// read its head, the body bytes it read from the client and wrote to it,
// and, when it was forwarded, how long the upstream took and the status it
// answered. The front makes one per request while the access log is on and
// serves the request through it: it is the writer every handler below the
// front writes to, so both HTTP engines, the door's refusals and both
// upstream paths are measured alike. Exchanges are recycled, so measuring
// costs the hot path no allocation; a request with a body allocates its
// counter, which a transport may read after the exchange is recycled.
type exchange struct {
	http.ResponseWriter
	now   func() time.Time
	start time.Time
	wait  time.Duration // how long the door held the request for its tokens
	out   int64         // body bytes written to the client
	in    *count        // body bytes read from the client; nil: the request has no body

	// What the proxy records: up is false when the request was not
	// forwarded; upStatus is 0 when no answer came back from the upstream.
	up       bool
	upStart  time.Time
	upEnd    time.Time
	upStatus int
	status   int // the first final status written, which the proxy takes as the upstream's
	failed   bool
}

var exchangePool = sync.Pool{New: func() any { return new(exchange) }}

// count is a request body that counts the bytes read from it.
type count struct {
	io.ReadCloser
	n atomic.Int64 // read by the access log while a transport may still read the body
}

func (c *count) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// bodyBytes returns the body bytes read from the client.
func (x *exchange) bodyBytes() int64 {
	if x.in == nil {
		return 0
	}
	return x.in.n.Load()
}

// countBody counts what is read of r's body, if it has one.
func (x *exchange) countBody(r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		x.in = &count{ReadCloser: r.Body}
		r.Body = x.in
	}
}

// WriteHeader records the first final status, as the door's writer does.
func (x *exchange) WriteHeader(code int) {
	if x.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		x.status = code
	}
	x.ResponseWriter.WriteHeader(code)
}

func (x *exchange) Write(p []byte) (int, error) {
	if x.status == 0 {
		x.status = http.StatusOK
	}
	n, err := x.ResponseWriter.Write(p)
	x.out += int64(n)
	return n, err
}

// WriteAnswer hands a whole answer to a server that writes it at once (see
// package answer), counting its body.
func (x *exchange) WriteAnswer(status int, fields, body []byte) bool {
	aw, ok := x.ResponseWriter.(answer.Writer)
	if !ok || !aw.WriteAnswer(status, fields, body) {
		return false
	}
	x.status, x.out = status, int64(len(body))
	return true
}

// FlushError flushes through to the client; http.ResponseController uses it.
func (x *exchange) FlushError() error {
	return http.NewResponseController(x.ResponseWriter).Flush()
}

// Flush implements http.Flusher for handlers that assert it directly.
func (x *exchange) Flush() { _ = x.FlushError() }

// Unwrap lets http.ResponseController reach the server's writer: to
// hijack an upgraded connection, whose bytes are then no longer counted,
// and to move deadlines.
func (x *exchange) Unwrap() http.ResponseWriter { return x.ResponseWriter }

// exchangeOf returns the exchange w writes through, or nil when the access
// log is off: it walks the Unwrap chain as http.ResponseController does.
func exchangeOf(w http.ResponseWriter) *exchange {
	for {
		switch t := w.(type) {
		case *exchange:
			return t
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return nil
		}
	}
}

// forwarding records that the proxy sends the request to the upstream.
func (x *exchange) forwarding() {
	x.up, x.upStart = true, x.now()
}

// forwarded records that the proxy is done with the upstream: the status
// written is the upstream's unless the proxy answered the failure itself.
func (x *exchange) forwarded() {
	x.upEnd = x.now()
	if !x.failed {
		x.upStatus = x.status
	}
}

// pending finds the exchange of a request the door decides, since the
// door's Decided hook is given the request alone. Its shards keep requests
// on different cores from waiting on one lock; a map reuses its slots, so
// tracking a request allocates nothing once the maps have grown.
type pending struct {
	seed   maphash.Seed
	shards [16]struct {
		mu sync.Mutex // guards m
		m  map[*http.Request]*exchange
	}
}

func newPending() *pending {
	p := &pending{seed: maphash.MakeSeed()}
	for i := range p.shards {
		p.shards[i].m = make(map[*http.Request]*exchange)
	}
	return p
}

func (p *pending) shard(r *http.Request) int {
	return int(maphash.Comparable(p.seed, r) % uint64(len(p.shards)))
}

func (p *pending) add(r *http.Request, x *exchange) {
	s := &p.shards[p.shard(r)]
	s.mu.Lock()
	s.m[r] = x
	s.mu.Unlock()
}

func (p *pending) remove(r *http.Request) {
	s := &p.shards[p.shard(r)]
	s.mu.Lock()
	delete(s.m, r)
	s.mu.Unlock()
}

// find returns r's exchange, or nil when r is not being served.
func (p *pending) find(r *http.Request) *exchange {
	s := &p.shards[p.shard(r)]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[r]
}
