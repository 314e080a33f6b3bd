package server

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/admitgo/admit/internal/answer"
)

// authAnswer is admit auth's decision on one original request, in the
// terms every front's protocol answers it in: the forward-auth answer over
// HTTP and Envoy's CheckResponse are each written from one.
type authAnswer struct {
	admitted bool
	status   int    // 200 when admitted; the refusal's, --deny-status applied
	outcome  string // what Admit-Status says
	// fields are the answer's fields whole, each "Name: value\r\n" in the
	// order and form http.Header.Write gives them: those the door and the
	// front wrote, and Admit-Status. An HTTP front's answer is written from
	// them at once, as the door writes a refusal (package answer).
	fields []byte
	body   []byte // a refusal's body; nil when admitted
}

// header is ans's fields as a map.
func (ans authAnswer) header() http.Header {
	h := make(http.Header)
	eachField(ans.fields, func(name, value string) { h[name] = append(h[name], value) })
	return h
}

// refusal is the answer to a request admit auth could not judge, as
// http.Error words it.
func (a *authFront) refusal(status int, outcome string) authAnswer {
	h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Content-Type-Options": {"nosniff"}}
	fields := insertStatusField(appendHeader(nil, h), outcome)
	return a.denied(authAnswer{status: status, outcome: outcome, fields: fields, body: []byte(http.StatusText(status) + ": " + outcome + "\n")})
}

// denied is refusal ans as --deny-status makes it: that status and no
// body. A front that needs the deny status (nginx's auth_request) makes its
// own answer and reads no body of admit's, which would cost the connection
// to admit: nginx closes an upstream connection whose answer it did not
// read to the end.
func (a *authFront) denied(ans authAnswer) authAnswer {
	if a.deny == 0 {
		return ans
	}
	ans.status, ans.body = a.deny, nil
	ans.fields = dropFields(ans.fields, "Content-Type", "X-Content-Type-Options")
	return ans
}

// answer writes ans as the answer to a forward-auth request: whole, to a
// server that takes it so (admit's HTTP/1.1 engine), else through the
// header map, the same answer but for the order of the fields the server
// adds (Date, Content-Length).
func (a *authFront) answer(w http.ResponseWriter, ans authAnswer) {
	if aw, ok := w.(answer.Writer); ok && aw.WriteAnswer(ans.status, ans.fields, ans.body) {
		return
	}
	maps.Copy(w.Header(), ans.header())
	w.WriteHeader(ans.status)
	w.Write(ans.body)
}

// authRecorder holds the answer the front and the door gave a forwarded
// request, for admit auth to answer from, and is that request's context,
// which carries the result the door tells. Nothing but admit writes to it,
// and the door's answers are small, so its body is bounded by what admit
// writes.
type authRecorder struct {
	context.Context // the context admit auth was asked under
	res             authResult
	header          http.Header // nil until asked
	status          int
	whole           []byte // the fields of an answer written whole; nil otherwise
	body            []byte
	space           [512]byte // holds whole and body when they fit: the door's refusals do
}

func (w *authRecorder) Value(key any) any {
	if key == (authResultKey{}) {
		return &w.res
	}
	return w.Context.Value(key)
}

func (w *authRecorder) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header, 4)
	}
	return w.header
}

func (w *authRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *authRecorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

var _ answer.Writer = (*authRecorder)(nil)

// statusRoom is what Admit-Status takes among fields, with room to spare
// for the longest outcome.
const statusRoom = len(admitStatus+": \r\n") + 32

// WriteAnswer takes the door's refusal whole, so that it reaches the front
// without a header map, as it reaches a client of the proxy.
func (w *authRecorder) WriteAnswer(status int, fields, body []byte) bool {
	if w.status != 0 || len(w.header) != 0 {
		return false
	}
	w.status = status
	// fields and body are the door's scratch space: one buffer holds
	// both, with room for Admit-Status among the fields.
	buf := w.space[:]
	if n := len(fields) + statusRoom + len(body); n > len(buf) {
		buf = make([]byte, n)
	}
	at := len(fields) + statusRoom
	w.whole = buf[:copy(buf, fields):at]
	w.body = buf[at : at+copy(buf[at:], body)]
	return true
}

// fields are the answer's fields whole, with Admit-Status saying outcome,
// but for those about the hop from admit to the front, which the front's
// own answer sets.
func (w *authRecorder) fields(outcome string) []byte {
	if w.whole != nil {
		return insertStatusField(w.whole, outcome)
	}
	if len(w.header) == 0 {
		return statusField(outcome)
	}
	dropHopFields(w.header)
	return insertStatusField(appendHeader(make([]byte, 0, 256), w.header), outcome)
}

// statusFields holds the Admit-Status field alone, one shared line per
// outcome: the outcomes are the door's and admit auth's, a fixed few.
var statusFields sync.Map // outcome -> []byte

// statusField is "Admit-Status: outcome\r\n", which no one modifies.
func statusField(outcome string) []byte {
	if v, ok := statusFields.Load(outcome); ok {
		return v.([]byte)
	}
	line := []byte(admitStatus + ": " + outcome + "\r\n")
	v, _ := statusFields.LoadOrStore(outcome, line[:len(line):len(line)])
	return v.([]byte)
}

// appendHeader appends h's fields whole, in the order and form
// http.Header.Write gives them: sorted by name, a line per value, line
// breaks in a value made spaces and its ends trimmed.
func appendHeader(dst []byte, h http.Header) []byte {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[name] {
			if strings.ContainsAny(v, "\r\n") {
				v = lineBreaks.Replace(v)
			}
			v = strings.TrimSpace(v)
			dst = append(append(append(append(dst, name...), ": "...), v...), "\r\n"...)
		}
	}
	return dst
}

// lineBreaks are made spaces in a value, as http.Header.Write makes them.
var lineBreaks = strings.NewReplacer("\r", " ", "\n", " ")

// insertStatusField inserts Admit-Status: outcome among fields in the
// place http.Header.Write gives it, after every name that sorts before it,
// in fields' own space when it has room (slices.Insert).
func insertStatusField(fields []byte, outcome string) []byte {
	at := 0
	for at < len(fields) {
		n := bytes.IndexByte(fields[at:], '\n')
		if n < 0 {
			break // not a whole line: no field of admit's ends so
		}
		if name, _, _ := bytes.Cut(fields[at:at+n], []byte(": ")); string(name) > admitStatus {
			break
		}
		at += n + 1
	}
	var line [statusRoom]byte
	return slices.Insert(fields, at, append(append(append(line[:0], admitStatus+": "...), outcome...), "\r\n"...)...)
}

// dropFields removes the fields of names from whole fields, in place; it
// writes nothing when none is there, so fields may be shared then.
func dropFields(fields []byte, names ...string) []byte {
	present := false
	eachLine(fields, func(name, _ []byte) { present = present || slices.Contains(names, string(name)) })
	if !present {
		return fields
	}
	out := fields[:0]
	eachLine(fields, func(name, line []byte) {
		if !slices.Contains(names, string(name)) {
			out = append(out, line...)
		}
	})
	return out
}

// eachField calls f with the name and value of each of whole fields.
func eachField(fields []byte, f func(name, value string)) {
	eachLine(fields, func(name, line []byte) {
		_, value, _ := bytes.Cut(line, []byte(": "))
		f(string(name), string(bytes.TrimSuffix(value, []byte("\r\n"))))
	})
}

// eachLine calls f with the name and the whole line of each of whole
// fields.
func eachLine(fields []byte, f func(name, line []byte)) {
	for len(fields) > 0 {
		end := bytes.IndexByte(fields, '\n') + 1
		if end == 0 {
			end = len(fields) // not a whole line: no field of admit's ends so
		}
		name, _, _ := bytes.Cut(fields[:end], []byte(": "))
		f(name, fields[:end])
		fields = fields[end:]
	}
}
