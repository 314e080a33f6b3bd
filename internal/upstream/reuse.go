package upstream

import "errors"

// maxInformational is how many 1xx answers one request may get before its
// final answer: net/http's Transport refused a sixth until Go 1.24, and no
// app sends more than a 100 Continue and an Early Hints or two. An
// upstream that sends more is refused (502), and its connection closed.
const maxInformational = 5

// errInformational is the cause when an upstream sends more than
// maxInformational 1xx answers to one request.
var errInformational = errors.New("upstream: more than 5 informational (1xx) answers to one request")

// A connection carries the next request only when the bytes after an
// answer's framed end can be nothing but the next answer. unfit reports
// why, after the final answer with status, Content-Length length (-1:
// none) and chunked framing to a request of method, that is not so, or ""
// when the connection may carry another request. Each row is a way an
// upstream (or the app behind it) can frame an answer otherwise than the
// proxy reads it, so that bytes it meant as a body would be read as the
// answer to another client's request:
//
//   - HEAD: the answer has no body, but apps compute one anyway and some
//     servers send it (Python's wsgiref does, in a second write, after the
//     head), so its bytes arrive after the answer is over, when nobody
//     watches for them.
//   - 204 or 304 with a Transfer-Encoding or a Content-Length other than
//     0: the answer has no body, but it says it has one, and the upstream
//     may send it. A Content-Length of 0, which some frameworks set on
//     every answer, frames the same nothing either way.
//
// The other causes are the answer's own and are read from it: the upstream
// said it closes (Connection: close, HTTP/1.0 without keep-alive), the body
// runs until the upstream closes, the answer was cut or refused, or bytes
// wait past its framed end. More than maxInformational 1xx answers are
// refused before a final one comes.
func unfit(method string, status int, length int64, chunked bool) string {
	switch {
	case method == "HEAD":
		return "an answer to HEAD, whose body an upstream may send anyway"
	case (status == 204 || status == 304) && (chunked || length > 0):
		return "a 204 or 304 that frames a body"
	}
	return ""
}
