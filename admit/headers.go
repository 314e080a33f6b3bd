package admit

import (
	"net/http"
	"strconv"
)

// rejectWith answers a rejected request: status, Retry-After in whole
// seconds, and a short plain-text body.
func rejectWith(w http.ResponseWriter, status, retry int) {
	w.Header().Set("Retry-After", strconv.Itoa(max(retry, 1)))
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
