package admit

import (
	"net/http"
	"strconv"
)

// rejectWith answers a rejected request: status, Retry-After in whole
// seconds, and a short plain-text body.
func rejectWith(w http.ResponseWriter, r *http.Request, status, retry int) {
	h := w.Header()
	if retry >= 1 && retry < len(retryAfter) {
		h["Retry-After"] = retryAfter[retry]
	} else {
		h.Set("Retry-After", strconv.Itoa(max(retry, 1)))
	}
	refuse(w, r, status)
}

// Header values shared by every refusal, so a flood of them allocates
// nothing. Each slice has its capacity cut to its length, so a later Add
// copies instead of writing into the shared array.
var (
	retryAfter  = secondsValues(60)
	textPlain   = []string{"text/plain; charset=utf-8"}[:1:1]
	noSniff     = []string{"nosniff"}[:1:1]
	closeValue  = []string{"close"}[:1:1]
	refusalBody = map[int][]byte{
		http.StatusTooManyRequests:       []byte("Too Many Requests\n"),
		http.StatusServiceUnavailable:    []byte("Service Unavailable\n"),
		http.StatusRequestEntityTooLarge: []byte("Request Entity Too Large\n"),
	}
)

// secondsValues returns header values "0" to "n-1".
func secondsValues(n int) [][]string {
	v := make([][]string, n)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}[:1:1]
	}
	return v
}

// refuse answers status without reading the request body, as http.Error
// would but without allocating. Over HTTP/1.x the server would first try to
// drain an unread body before it writes the answer, so a client that
// promises a body and stalls would hold the connection until the server's
// own timeouts; closing the connection instead skips the drain.
func refuse(w http.ResponseWriter, r *http.Request, status int) {
	h := w.Header()
	if r.ProtoMajor == 1 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		h["Connection"] = closeValue
	}
	delete(h, "Content-Length")
	h["Content-Type"] = textPlain
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	_, _ = w.Write(refusalBody[status])
}

// setPolicyHeaders adds the IETF draft RateLimit-Policy and RateLimit
// structured fields (draft-ietf-httpapi-ratelimit-headers): q is the burst, w
// the seconds a drained bucket takes to fill, r the whole tokens left and t
// the seconds until the bucket is full again.
func setPolicyHeaders(h http.Header, g *group, left, reset int) {
	h.Set("RateLimit-Policy", g.policy)
	h.Set("RateLimit", `"`+string(g.name)+`";r=`+strconv.Itoa(max(left, 0))+`;t=`+strconv.Itoa(max(reset, 0)))
}
