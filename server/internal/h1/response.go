package h1

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	whole "github.com/admitgo/admit/internal/answer"
)

// bufferBeforeChunking is how much of a body the engine holds before it
// must frame the answer: an answer that ends within it gets a length, as
// net/http gives one.
const bufferBeforeChunking = 2048

// response is the engine's http.ResponseWriter. It frames the answer as
// net/http's server does: a length when the handler sets one or ends
// within bufferBeforeChunking, chunks otherwise, Date, a sniffed
// Content-Type, Connection: close when either side closes; 1xx answers
// with the header as it stands.
type response struct {
	c      *conn
	req    *http.Request
	ctx    requestContext // the request's
	header http.Header    // nil until Header is called

	status     int         // the final status; 0 until WriteHeader
	declared   int64       // the length the handler set, or -1
	written    int64       // body bytes the handler wrote
	body       []byte      // held until commit
	buf        *[]byte     // body's pooled buffer
	committed  bool        // the head is written
	done       atomic.Bool // finish has run: a handler's stray goroutine gets errDone
	chunky     bool        // no length known when WriteHeader was called: chunks, unless the handler ends within the buffer
	chunked    bool
	closeAfter bool
	connClose  bool     // the head says Connection: close
	trailed    bool     // the handler announced or set trailers
	trailers   []string // the names the Trailer field announced
	hasTE      bool     // the handler set Transfer-Encoding
	typed      bool     // the handler set Content-Type or Content-Encoding
	dated      bool     // the handler set Date, if only to nil
	lengthSet  bool     // the handler set Content-Length

	// wmu guards the fields to readSet, which the watch and the timer
	// read, and those to setWhileWriting, which a write deadline set from
	// another goroutine than the writing one reaches.
	wmu             sync.Mutex
	watching        bool
	unwatched       bool      // the handler has returned: no watch may start
	readAt          time.Time // the read deadline the handler set before the watch started
	readSet         bool      // readAt is set: the watch reads under it
	writeAt         time.Time // the write deadline the handler set; zero: none
	writing         bool      // a write to the connection is under way
	setWhileWriting bool      // writeAt went to the connection during that write

	ahead    bool          // a byte was read ahead already: nothing to watch for, as in net/http
	timed    atomic.Bool   // the watch's timer is done with this request
	aborting atomic.Bool   // unwatch is ending the watch's read
	watched  chan struct{} // closed when the watch's read has returned
	readErr  error         // what the watch's read ended with, read once watched is closed

	store headStore // the request's head was read into it
	start time.Time // when the handler was called
}

// now reads the clock from the request's start: the monotonic reading
// alone costs half of time.Now's, and a request reads the time three times
// (its start, its Date, its end).
func (w *response) now() time.Time { return w.start.Add(time.Since(w.start)) }

// init readies w, new for each request, to answer r: a handler's
// goroutine that writes after its handler returned reaches nothing the
// next request uses. It holds the body in a pooled buffer until finish, so
// an idle connection keeps none.
func (w *response) init(c *conn, r *http.Request) {
	buf := bodies.Get().(*[]byte)
	w.c, w.req, w.declared = c, r, -1
	w.buf, w.body, w.closeAfter, w.ahead = buf, (*buf)[:0], r.Close, c.cr.pending >= 0
}

// cancel ends the request's context.
func (w *response) cancel() { w.ctx.cancel() }

// Header makes the header map when a handler first asks for it: a refusal
// the door writes whole (WriteAnswer) never does.
func (w *response) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header)
	}
	return w.header
}

func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if w.status != 0 || w.done.Load() {
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.status = code
	// An invalid length frames nothing, and goes out as net/http sends it
	// (chunked without it; as it is to HEAD).
	if n, err := strconv.ParseInt(headerGet(w.header, "Content-Length"), 10, 64); err == nil && n >= 0 {
		w.declared = n
	}
	w.writeHead()
}

func (w *response) Write(p []byte) (int, error) {
	if w.done.Load() {
		return 0, errDone
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	// Counted even when refused, as net/http counts it: the answer is
	// then short of its length, and its connection closes.
	w.written += int64(len(p))
	if w.declared >= 0 && w.written > w.declared {
		return 0, http.ErrContentLength
	}
	if !w.committed {
		if len(w.body)+len(p) <= bufferBeforeChunking {
			w.body = append(w.body, p...)
			return len(p), nil
		}
		w.commit(false, p)
	}
	return len(p), w.writeBody(p)
}

// WriteString is Write without a copy of s, which io.WriteString uses.
func (w *response) WriteString(s string) (int, error) {
	if w.done.Load() {
		return 0, errDone
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed && len(w.body)+len(s) <= bufferBeforeChunking && bodyAllowed(w.status) &&
		(w.declared < 0 || w.written+int64(len(s)) <= w.declared) {
		w.written += int64(len(s))
		w.body = append(w.body, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// writeBody writes p as the body's next bytes, a chunk when chunked; an
// answer to HEAD has none (what the handler wrote of it served to sniff
// its type).
func (w *response) writeBody(p []byte) error {
	if len(p) == 0 || w.req.Method == http.MethodHead {
		return nil
	}
	bw := w.c.bw
	if w.chunked {
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(p)), 16))
		bw.WriteString("\r\n")
	}
	_, err := bw.Write(p)
	if w.chunked {
		_, err = bw.WriteString("\r\n")
	}
	return err
}

// finish ends the answer once the handler has returned: the head if still
// held, the last chunk and the trailers, all flushed.
func (w *response) finish() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true, nil)
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	}
	if w.declared >= 0 && w.written != w.declared && w.req.Method != http.MethodHead && bodyAllowed(w.status) {
		w.closeAfter = true // the body is not what its length says
	}
	w.done.Store(true)
	if *w.buf = w.body[:0]; cap(w.body) <= bufferBeforeChunking {
		bodies.Put(w.buf)
	}
	w.body, w.buf = nil, nil
	return bw.Flush()
}

// bodies are the buffers answers hold their bodies in until committed.
var bodies = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// errDone is what a write after the handler returned gets.
var errDone = errors.New("h1: write after the handler returned")

// writeTrailers writes the trailers, as net/http gathers them: the
// announced names' values and the fields set under http.TrailerPrefix.
func (w *response) writeTrailers() {
	var t http.Header
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[http.CanonicalHeaderKey(name)] = vv
		}
	}
	for _, name := range w.trailers {
		for _, v := range w.header[name] {
			if t == nil {
				t = make(http.Header)
			}
			t.Add(name, v)
		}
	}
	_ = t.Write(w.c.bw)
}

// FlushError sends what is written so far, framing the answer now; the
// handler's http.ResponseController calls it.
func (w *response) FlushError() error {
	if w.done.Load() {
		return errDone
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false, nil)
	}
	return w.c.bw.Flush()
}

func (w *response) Flush() { _ = w.FlushError() }

// SetReadDeadline bounds the watch's read, and so the request: its context
// ends at t, as net/http's background read ends it. Until the watch starts
// nothing reads the connection, so the watch takes the deadline then, and
// a request that ends sooner costs the connection no deadline change.
func (w *response) SetReadDeadline(t time.Time) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.unwatched { // the handler has returned: the connection is the next request's
		return errDone
	}
	if !w.watching {
		w.readAt, w.readSet = t, true
		return nil
	}
	w.c.ownDeadline = false
	return w.c.nc.SetReadDeadline(t)
}

// SetWriteDeadline bounds the answer's writes from now on. The connection
// takes it at its next write (see connWriter), so that a deadline no write
// reaches costs nothing; a write under way, which may be blocked on a
// client that does not read, takes it at once, as under net/http.
func (w *response) SetWriteDeadline(t time.Time) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.done.Load() {
		return errDone
	}
	w.writeAt = t
	if w.writing {
		w.setWhileWriting = true
		return w.c.nc.SetWriteDeadline(t)
	}
	return nil
}

// EnableFullDuplex has nothing to do: the engine's requests have no body.
func (w *response) EnableFullDuplex() error { return nil }

var _ whole.Writer = (*response)(nil)

// WriteAnswer writes a whole answer the door prepared (see answer.Writer),
// as WriteHeader, Write and finish would write it from a header of those
// fields: the fields, Date, the body's length, and Connection: close when
// the connection closes after it. It takes only what it frames alike: a
// final status with a body, to a request other than HEAD, before anything
// else of the answer and with an empty header.
func (w *response) WriteAnswer(status int, fields, body []byte) bool {
	if w.status != 0 || w.done.Load() || len(w.header) != 0 || status < 200 || !bodyAllowed(status) ||
		w.req.Method == http.MethodHead {
		return false
	}
	w.status, w.committed = status, true
	w.declared, w.written = int64(len(body)), int64(len(body))
	w.closeAfter = w.closeAfter || w.c.s.shutting.Load()
	bw := w.c.bw
	writeStatusLine(bw, status)
	bw.Write(fields)
	bw.WriteString("Date: ")
	bw.Write(appendDate(bw.AvailableBuffer(), w.now()))
	bw.WriteString("\r\nContent-Length: ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(body)), 10))
	if w.closeAfter {
		bw.WriteString("\r\nConnection: close")
	}
	bw.WriteString("\r\n\r\n")
	bw.Write(body)
	return true
}
