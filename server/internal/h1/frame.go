package h1

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The framing of an answer, by net/http's rules (its chunkWriter, for
// HTTP/1.1): which fields the head carries, which the engine adds, and
// whether the body goes with a length or in chunks.

// bodyAllowed reports whether the status may carry a body, as net/http
// decides.
func bodyAllowed(status int) bool {
	return (status < 100 || status > 199) && status != http.StatusNoContent && status != http.StatusNotModified
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

// writeStatusLine writes the status line of code, as net/http's server
// writes it.
func writeStatusLine(bw *bufio.Writer, code int) {
	if code >= 0 && code < len(statusLines) {
		bw.WriteString(statusLines[code])
		return
	}
	bw.WriteString(statusLine(code))
}

// statusLines holds the status lines of the codes below 600, written once.
var statusLines = func() (lines [600]string) {
	for code := range lines {
		lines[code] = statusLine(code)
	}
	return lines
}()

// statusLine is net/http's server's status line of code.
func statusLine(code int) string {
	var b strings.Builder
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(code))
	b.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		b.WriteString(text)
	} else {
		b.WriteString("status code ")
		b.WriteString(strconv.Itoa(code))
	}
	b.WriteString("\r\n")
	return b.String()
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
		bw.Write(appendDate(bw.AvailableBuffer(), w.now()))
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

// date is Date's value for a second, formatted once in it.
type date struct {
	second int64
	text   []byte
}

var today atomic.Pointer[date]

// appendDate appends Date's value for now: a connection formats it at most
// once a second, and none waits on another.
func appendDate(b []byte, now time.Time) []byte {
	d := today.Load()
	if d == nil || d.second != now.Unix() {
		d = &date{second: now.Unix(), text: now.UTC().AppendFormat(nil, http.TimeFormat)}
		today.Store(d)
	}
	return append(b, d.text...)
}
