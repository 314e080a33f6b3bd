package h1

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
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
	cancel context.CancelFunc
	header http.Header

	status    int         // the final status; 0 until WriteHeader
	declared  int64       // the length the handler set, or -1
	written   int64       // body bytes the handler wrote
	body      []byte      // held until commit
	buf       *[]byte     // body's pooled buffer
	committed bool        // the head is written
	done      atomic.Bool // finish has run: a handler's stray goroutine gets errDone
	// writeDeadline: the handler set a write deadline, lifted after it
	writeDeadline bool
	chunky        bool // no length known when WriteHeader was called: chunks, unless the handler ends within the buffer
	chunked       bool
	closeAfter    bool
	connClose     bool     // the head says Connection: close
	trailed       bool     // the handler announced or set trailers
	trailers      []string // the names the Trailer field announced
	hasTE         bool     // the handler set Transfer-Encoding
	typed         bool     // the handler set Content-Type or Content-Encoding
	dated         bool     // the handler set Date, if only to nil
	lengthSet     bool     // the handler set Content-Length

	wmu       sync.Mutex // guards the following two, which the timer's watch reads
	watching  bool
	unwatched bool          // the handler has returned: no watch may start
	ahead     bool          // a byte was read ahead already: nothing to watch for, as in net/http
	aborting  atomic.Bool   // unwatch is ending the watch's read
	watched   chan struct{} // closed when the watch's read has returned
	readErr   error         // what the watch's read ended with, read once watched is closed
}

// newResponse is the writer of one request, new for each: a handler's
// goroutine that writes after its handler returned reaches nothing the
// next request uses. It holds the body in a pooled buffer until finish, so
// an idle connection keeps none.
func newResponse(c *conn, r *http.Request, cancel context.CancelFunc) *response {
	buf := bodies.Get().(*[]byte)
	return &response{c: c, req: r, cancel: cancel, header: make(http.Header), declared: -1,
		buf: buf, body: (*buf)[:0], closeAfter: r.Close, ahead: c.cr.pending >= 0}
}

func (w *response) Header() http.Header { return w.header }

// bodyAllowed reports whether the status may carry a body, as net/http
// decides.
func bodyAllowed(status int) bool {
	return (status < 100 || status > 199) && status != http.StatusNoContent && status != http.StatusNotModified
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

// writeInformational sends a 1xx answer at once, with the header but its
// framing fields.
func (w *response) writeInformational(code int) {
	bw := w.c.bw
	writeStatusLine(bw, code)
	_ = w.header.WriteSubset(bw, excludedNoBody)
	bw.WriteString("\r\n")
	_ = bw.Flush()
}

var excludedNoBody = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}

func writeStatusLine(bw *bufio.Writer, code int) {
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(code), 10))
	bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		bw.WriteString(text)
	} else {
		bw.WriteString("status code ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(code), 10))
	}
	bw.WriteString("\r\n")
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

// writeHead writes the status line and the handler's fields, as they
// stand when it calls WriteHeader (net/http writes a copy of the header
// taken then), and notes what framing the answer takes by net/http's
// rules (its chunkWriter.writeHeader, for HTTP/1.1); commit adds the
// fields that depend on the body.
func (w *response) writeHead() {
	h := w.header
	var exclude map[string]bool
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			exclude = withKey(exclude, k)
			w.trailed = true
		}
	}
	for _, v := range h["Trailer"] {
		w.trailed = true
		for name := range strings.SplitSeq(v, ",") {
			if name = http.CanonicalHeaderKey(strings.Trim(name, " \t")); name != "" && httpguts.ValidTrailerHeader(name) {
				w.trailers = append(w.trailers, name)
			}
		}
	}
	te := headerGet(h, "Transfer-Encoding")
	w.hasTE = te != ""
	_, w.typed = h["Content-Type"]
	w.typed = w.typed || h.Get("Content-Encoding") != ""
	_, w.dated = h["Date"]
	w.lengthSet = h["Content-Length"] != nil
	isHEAD := w.req.Method == http.MethodHead
	allowed := bodyAllowed(w.status)
	if headerGet(h, "Connection") == "close" || w.c.s.shutting.Load() {
		w.closeAfter = true
	}
	if !allowed {
		for _, k := range suppressed(w.status) {
			exclude = withKey(exclude, k)
		}
	}
	if w.declared >= 0 && w.hasTE && te != "identity" {
		exclude = withKey(exclude, "Content-Length")
		w.declared = -1
	}
	switch {
	case isHEAD || !allowed, w.declared >= 0:
		exclude = withKey(exclude, "Transfer-Encoding")
	case te == "identity":
		w.closeAfter = true
		exclude = withKey(exclude, "Transfer-Encoding")
	default:
		w.chunky = true // unless commit finds the whole body
		exclude = withKey(exclude, "Content-Length")
		if te == "chunked" {
			exclude = withKey(exclude, "Transfer-Encoding")
		}
	}
	if w.closeAfter && (w.c.s.shutting.Load() || !httpguts.HeaderValuesContainsToken(h["Connection"][:min(1, len(h["Connection"]))], "close")) {
		exclude = withKey(exclude, "Connection")
		w.connClose = true
	}
	writeStatusLine(w.c.bw, w.status)
	_ = h.WriteSubset(w.c.bw, exclude)
}

// commit ends the head with the fields net/http adds, in its order, and
// writes the body held so far. final says the handler has returned, so
// the body held is the whole body, and the answer takes its length; next
// is the write that did not fit, whose first bytes the type is sniffed
// from too.
func (w *response) commit(final bool, next []byte) {
	w.committed = true
	allowed := bodyAllowed(w.status)
	var length string
	switch {
	case final && !w.trailed && !w.hasTE && !w.lengthSet && allowed && (w.req.Method != http.MethodHead || len(w.body) > 0):
		w.declared = int64(len(w.body))
		length = strconv.Itoa(len(w.body))
	case w.chunky:
		w.chunked = true
	}
	var contentType string
	if !w.typed && !w.hasTE && allowed && len(w.body)+len(next) > 0 {
		contentType = http.DetectContentType(sniffed(w.body, next))
	}
	bw := w.c.bw
	if !w.dated {
		bw.WriteString("Date: ")
		bw.Write(appendDate(bw.AvailableBuffer()))
		bw.WriteString("\r\n")
	}
	for _, f := range [...]struct{ name, value string }{
		{"Content-Length", length}, {"Content-Type", contentType},
		{"Connection", when(w.connClose, "close")}, {"Transfer-Encoding", when(w.chunked, "chunked")},
	} {
		if f.value != "" {
			bw.WriteString(f.name)
			bw.WriteString(": ")
			bw.WriteString(f.value)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("\r\n")
	_ = w.writeBody(w.body)
	w.body = w.body[:0]
}

// when is v if b holds, else empty.
func when(b bool, v string) string {
	if b {
		return v
	}
	return ""
}

// sniffLen is how much of a body http.DetectContentType reads.
const sniffLen = 512

// sniffed is the body's first sniffLen bytes: those held, then next's.
func sniffed(held, next []byte) []byte {
	if len(held) >= sniffLen || len(next) == 0 {
		return held
	}
	if len(held) == 0 {
		return next
	}
	return append(held[:len(held):len(held)], next[:min(len(next), sniffLen-len(held))]...)
}

// headerGet is the first value of the field, as net/http's Header.get
// reads it: the name as given, no canonicalisation.
func headerGet(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// suppressed is what an answer of status must not carry, as net/http
// leaves out.
func suppressed(status int) []string {
	if status == http.StatusNotModified {
		return []string{"Content-Type", "Content-Length", "Transfer-Encoding"}
	}
	return []string{"Content-Length", "Transfer-Encoding"}
}

func withKey(m map[string]bool, k string) map[string]bool {
	if m == nil {
		m = make(map[string]bool)
	}
	m[k] = true
	return m
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

func (w *response) SetReadDeadline(t time.Time) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.unwatched { // the handler has returned: the connection is the next request's
		return errDone
	}
	w.c.ownDeadline = false
	return w.c.nc.SetReadDeadline(t)
}
func (w *response) SetWriteDeadline(t time.Time) error {
	if w.done.Load() {
		return errDone
	}
	w.writeDeadline = true
	return w.c.nc.SetWriteDeadline(t)
}

// EnableFullDuplex has nothing to do: the engine's requests have no body.
func (w *response) EnableFullDuplex() error { return nil }

// date is Date's value, formatted once a second.
var date struct {
	sync.Mutex
	second int64
	text   []byte
}

func appendDate(b []byte) []byte {
	now := time.Now()
	date.Lock()
	defer date.Unlock()
	if s := now.Unix(); s != date.second {
		date.second, date.text = s, now.UTC().AppendFormat(date.text[:0], http.TimeFormat)
	}
	return append(b, date.text...)
}
