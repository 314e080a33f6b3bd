package bench

import "net/http"

// Discard is a ResponseWriter that keeps nothing but the status, so that a
// benchmark measures the middleware and not the writer. Like many test
// writers it does not support read deadlines or flushing.
//
// Call Reset before each request: a server gives every request a fresh header
// map, and some peers add (rather than set) their headers.
//
// A Discard is not safe for concurrent use; give each goroutine its own.
type Discard struct {
	h    http.Header
	code int
}

// NewDiscard returns a writer with an empty header map.
func NewDiscard() *Discard { return &Discard{h: http.Header{}} }

func (d *Discard) Header() http.Header { return d.h }

func (d *Discard) Write(p []byte) (int, error) {
	if d.code == 0 {
		d.code = http.StatusOK
	}
	return len(p), nil
}

func (d *Discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}

// Reset empties the header map, keeping its storage, and forgets the status.
func (d *Discard) Reset() {
	clear(d.h)
	d.code = 0
}

// Status returns the status of the last response: 200 when the handler wrote
// nothing.
func (d *Discard) Status() int {
	if d.code == 0 {
		return http.StatusOK
	}
	return d.code
}

// OK is the trivial handler behind every peer: it answers 200 with no body.
var OK http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
})
