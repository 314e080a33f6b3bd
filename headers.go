package admit

import (
	"net/http"
	"strconv"
)

// setRetryAfter sets Retry-After to retry whole seconds, at least 1, from
// the shared values where it can.
func setRetryAfter(h http.Header, retry int) {
	if retry >= 1 && retry < len(retryAfter) {
		h["Retry-After"] = retryAfter[retry]
	} else {
		h.Set("Retry-After", strconv.Itoa(max(retry, 1)))
	}
}

// Header values shared by every refusal, so a flood of them allocates
// nothing. Each slice has its capacity cut to its length, so a later Add
// copies instead of writing into the shared array.
var (
	retryAfter = secondsValues(60)
	textPlain  = []string{"text/plain; charset=utf-8"}[:1:1]
	noSniff    = []string{"nosniff"}[:1:1]
	closeValue = []string{"close"}[:1:1]
	// refusalStatuses are the statuses the door answers itself.
	refusalStatuses = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable,
		http.StatusRequestEntityTooLarge, http.StatusBadRequest, http.StatusUnauthorized, http.StatusRequestTimeout}
)

// refusalBodies returns a group's bodies for each refusal status, built once
// so that a flood of refusals allocates nothing: the status and the limit.
// A group's RefusalStatus gets its body too.
func refusalBodies(g Group, b Budget) map[int][]byte {
	m := make(map[int][]byte, len(refusalStatuses)+1)
	for _, status := range append(refusalStatuses[:len(refusalStatuses):len(refusalStatuses)], b.RefusalStatus) {
		m[status] = []byte(http.StatusText(status) + ": limit " + strconv.Quote(string(g)) + "\n")
	}
	return m
}

// secondsValues returns header values "0" to "n-1".
func secondsValues(n int) [][]string {
	v := make([][]string, n)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}[:1:1]
	}
	return v
}

// writeRefusal answers status without reading the request body, as http.Error
// would but without allocating. Over HTTP/1.x the server would first try to
// drain an unread body before it writes the answer, so a client that
// promises a body and stalls would hold the connection until the server's
// own timeouts; closing the connection instead skips the drain.
func writeRefusal(w http.ResponseWriter, r *http.Request, g *group, status int) {
	h := w.Header()
	if closesForBody(r) {
		h["Connection"] = closeValue
	}
	delete(h, "Content-Length")
	h["Content-Type"] = textPlain
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	_, _ = w.Write(g.bodies[status])
}

// writeRefused answers a refusal of outcome o by g, which carries
// Retry-After, as writeRefusal does but with the group's own content type
// and body (see Budget.RefusalBody); scratch holds the retry time's digits.
func writeRefused(w http.ResponseWriter, r *http.Request, g *group, status int, o outcome, retry int, scratch []byte) {
	a := &g.answer
	h := w.Header()
	if closesForBody(r) {
		h["Connection"] = closeValue
	}
	delete(h, "Content-Length")
	h["Content-Type"] = a.contentType
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	if a.bodies[o] == nil {
		_, _ = w.Write(g.bodies[status])
		return
	}
	// The parts go one by one, so that a long body needs no buffer of its
	// length; the server frames them as one.
	for i, p := range a.bodies[o] {
		if i > 0 {
			_, _ = w.Write(strconv.AppendInt(scratch[:0], int64(max(retry, 1)), 10))
		}
		_, _ = w.Write(p)
	}
}

// appendRefusalFields appends to b the header fields of a refusal by g,
// byte for byte as writeRefusal and refused put them in the header map and
// http.Header.Write writes them: sorted by name, each "Name: value\r\n".
// rateLimit adds the group's rate-limit fields (see Budget.XRateLimit). It returns
// nil for a group whose name net/http would rewrite in a value.
func appendRefusalFields(b []byte, g *group, retry int, rateLimit bool) []byte {
	if !g.writtenAsIs {
		return nil
	}
	retry = max(retry, 1)
	a, next := &g.answer, 0
	b = a.appendExtra(b, &next, "Content-Type")
	b = append(b, a.typeField...)
	b = a.appendExtra(b, &next, "Ratelimit")
	kind := g.fields.kind
	if rateLimit && kind == draftFields {
		b = append(b, "Ratelimit: \""...)
		b = append(b, g.name...)
		b = append(b, "\";r=0;t="...)
		b = strconv.AppendInt(b, int64(retry), 10)
		b = append(b, "\r\nRatelimit-Policy: "...)
		b = append(b, g.fields.policy[0]...)
		b = append(b, "\r\n"...)
	}
	b = a.appendExtra(b, &next, "Retry-After")
	b = append(b, "Retry-After: "...)
	b = strconv.AppendInt(b, int64(retry), 10)
	b = append(b, "\r\n"...)
	b = a.appendExtra(b, &next, "X-Content-Type-Options")
	b = append(b, "X-Content-Type-Options: nosniff\r\n"...)
	b = a.appendExtra(b, &next, "X-Ratelimit")
	if rateLimit && kind == xRateLimitFields {
		b = append(b, "X-Ratelimit-Limit: "...)
		b = append(b, g.fields.limit[0]...)
		b = append(b, "\r\nX-Ratelimit-Remaining: 0\r\nX-Ratelimit-Reset: "...)
		b = strconv.AppendInt(b, g.set.wall()+int64(retry), 10)
		b = append(b, "\r\n"...)
	}
	return a.appendExtra(b, &next, "")
}

// closesForBody reports whether a refusal of r closes its connection: an
// HTTP/1.x request whose body is unread.
func closesForBody(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}
