package admit

import (
	"net/http"
	"strconv"
)

// rejectWith answers a rejected request: status, Retry-After in whole
// seconds, and a short plain-text body.
func rejectWith(w http.ResponseWriter, r *http.Request, status, retry int) {
	w.Header().Set("Retry-After", strconv.Itoa(max(retry, 1)))
	refuse(w, r, status)
}

// refuse answers status without reading the request body. Over HTTP/1.x the
// server would first try to drain an unread body before it writes the
// answer, so a client that promises a body and stalls would hold the
// connection until the server's own timeouts; closing the connection instead
// skips the drain.
func refuse(w http.ResponseWriter, r *http.Request, status int) {
	if r.ProtoMajor == 1 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		w.Header().Set("Connection", "close")
	}
	http.Error(w, http.StatusText(status), status)
}

// setPolicyHeaders adds the IETF draft RateLimit-Policy and RateLimit
// structured fields (draft-ietf-httpapi-ratelimit-headers): q is the burst, w
// the seconds a drained bucket takes to fill, r the whole tokens left and t
// the seconds until the bucket is full again.
func setPolicyHeaders(h http.Header, g *group, left, reset int) {
	h.Set("RateLimit-Policy", g.policy)
	h.Set("RateLimit", `"`+string(g.name)+`";r=`+strconv.Itoa(max(left, 0))+`;t=`+strconv.Itoa(max(reset, 0)))
}
