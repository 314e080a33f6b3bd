package admit

import (
	"net/http"

	"github.com/admitgo/admit/internal/answer"
)

// refuse answers a request a limit refused, with the overflow handler when
// there is one and the limit has a free overflow slot, or with 429 or 503
// and Retry-After. The refusal counts on that limit alone. A server that
// writes an answer whole (answer.Writer) is offered the refusal's fields
// as bytes, appended to scratch: the same answer, without the header map,
// which it takes only when nothing else is in the header. The header is
// not looked at here, so that a server which makes its map on demand
// makes none.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, g *group, t *ticket, v verdict, scratch []byte) {
	if h.overflow != nil {
		if g.takeOverflow() {
			g.count(t, outcomeCached)
			h.tell(r, g, outcomeCached, h.serveOverflow(w, r, g))
			return
		}
		v.outcome, v.retry = outcomeGroupConcurrency, 1 // the overflow is at the group's cap
	}
	if aw, ok := w.(answer.Writer); ok && !closesForBody(r) {
		status := g.refusalStatus(v)
		fields := appendRefusalFields(scratch, g, v.retry, v.outcome == outcomeRateLimited)
		body := g.bodies[status]
		if g.answer.bodies[v.outcome] != nil {
			// The body goes after the fields when both fit the scratch
			// space, or the answer goes through the header map.
			n := len(fields)
			if fields != nil && n+g.answer.size[v.outcome] <= cap(fields) {
				fields = g.answer.appendBody(fields, v.outcome, v.retry)
				fields, body = fields[:n], fields[n:]
			} else {
				fields = nil
			}
		}
		if fields != nil && aw.WriteAnswer(status, fields, body) {
			g.count(t, v.outcome)
			h.tell(r, g, v.outcome, status)
			return
		}
	}
	status := h.refused(w.Header(), g, t, v)
	writeRefused(w, r, g, status, v.outcome, v.retry, scratch)
	h.tell(r, g, v.outcome, status)
}

// refused counts limit g's refusal v and writes its headers into hdr:
// Retry-After, the group's RefusalHeaders, and on a rate_limited refusal the group's rate-limit
// fields. It returns the refusal's status. Handler answers with it, and
// Decide reports it.
func (h *handler) refused(hdr http.Header, g *group, t *ticket, v verdict) int {
	g.count(t, v.outcome)
	setRetryAfter(hdr, v.retry)
	g.answer.setExtra(hdr)
	if v.outcome == outcomeRateLimited {
		g.setRefusalFields(hdr, max(v.retry, 1), g.set.wall)
	}
	return g.refusalStatus(v)
}

// refuseKey answers a request a limit cannot key.
func (h *handler) refuseKey(w http.ResponseWriter, r *http.Request, g *group, err error) {
	status := g.keyRefused(err)
	writeRefusal(w, r, g, status)
	h.tell(r, g, outcomeMissingKey, status)
}

// keyRefused counts a request g cannot key, and returns its status.
func (g *group) keyRefused(err error) int {
	g.shards[0].counts.outcomes[outcomeMissingKey].Add(1)
	return g.keyStatus(err)
}

// refusalStatus is what a refusal by g answers: 503 when the group cap
// or its store refused, the group's RefusalStatus (429
// unless it says) for the rest.
func (g *group) refusalStatus(v verdict) int {
	if v.outcome == outcomeGroupConcurrency || v.outcome == outcomeStoreError {
		return http.StatusServiceUnavailable
	}
	if g.budget.RefusalStatus != 0 {
		return g.budget.RefusalStatus
	}
	return http.StatusTooManyRequests
}

// keyStatus is what a request g cannot key is answered: 401 when the key
// is the Authorization header and it is missing, 400 otherwise.
func (g *group) keyStatus(err error) int {
	if err == errMissingKey && http.CanonicalHeaderKey(g.budget.Key.Header) == "Authorization" {
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}
