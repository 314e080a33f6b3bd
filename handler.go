package admit

import (
	"net/http"
	"time"
)

// handler is what Wrap returns: one group's door in front of next.
type handler struct {
	door     *Door
	group    *group
	next     http.Handler
	overflow http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d, g := h.door, h.group
	t, v := g.admit(d.key(r), d.now(), d.disabled, d.headers)
	var ww *writer
	settled := false
	defer func() {
		// A panic, in a shared store or in the handler: free what admission
		// took, charge an answer the client already got, and let it unwind.
		if !settled {
			status := http.StatusInternalServerError
			if ww != nil && ww.status != 0 {
				status = ww.status
			}
			h.settle(r, &t, v.outcome, status)
		}
	}()
	if g.budget.Store != nil && t.taken {
		v = h.decideShared(r, &t)
	}
	if v.evicted {
		g.shards[t.shard].counts.evictions.Add(1)
	}
	if v.retry > 0 { // rejected; admission took nothing, or gave it back
		settled = true
		if h.overflow != nil && g.takeOverflow() {
			g.count(&t, OutcomeCached)
			h.serveOverflow(w, r)
			return
		}
		if h.overflow != nil && v.outcome != OutcomeGroupConcurrency {
			v.outcome, v.retry = OutcomeGroupConcurrency, 1 // the overflow is at the group's cap
		}
		g.count(&t, v.outcome)
		status := http.StatusTooManyRequests
		if v.outcome == OutcomeGroupConcurrency || v.outcome == OutcomeStoreError {
			status = http.StatusServiceUnavailable
		}
		if d.headers && v.outcome == OutcomeRateLimited {
			setPolicyHeaders(w.Header(), g, 0, v.reset)
		}
		rejectWith(w, r, status, v.retry)
		return
	}
	if d.headers && t.taken {
		setPolicyHeaders(w.Header(), g, v.left, v.reset)
	}
	ww = &writer{ResponseWriter: w}
	if h.prepare(ww, r) {
		h.next.ServeHTTP(ww, r)
	}
	settled = true
	ww.release()
	h.settle(r, &t, v.outcome, ww.answered())
}

// serveOverflow serves a request over budget with the overflow handler,
// under the same body cap, deadlines and hold bound as an admitted request,
// in one of the group's overflow slots.
func (h *handler) serveOverflow(w http.ResponseWriter, r *http.Request) {
	ww := &writer{ResponseWriter: w}
	defer h.group.overflow.Add(-1)
	defer ww.release()
	if h.prepare(ww, r) {
		h.overflow.ServeHTTP(ww, r)
	}
}

// prepare applies the group's body deadline and cap and its hold bound. The
// body deadline covers reading the body only: net/http cancels the request's
// context when a read deadline passes, so once the body has been read the
// read deadline moves on to the hold bound (or is lifted), and a handler
// that acknowledges early keeps its context while it works, up to the
// bound. It answers 413 itself, and returns false, when the declared body is
// over the cap; the answer then settles like a handler's 4xx, so it costs a
// charge-on-failure client a token.
func (h *handler) prepare(w *writer, r *http.Request) bool {
	b := &h.group.budget
	hasBody := r.Body != nil && r.Body != http.NoBody
	if b.HoldTimeout > 0 || (b.ReadTimeout > 0 && hasBody) {
		if d := findDeadliner(w.ResponseWriter); d != nil {
			now := time.Now()
			var hold time.Time
			if b.HoldTimeout > 0 {
				hold = now.Add(b.HoldTimeout)
				_ = d.SetWriteDeadline(hold)
				w.held, w.hold = d, hold
			}
			switch {
			case b.ReadTimeout > 0 && hasBody:
				body := now.Add(b.ReadTimeout)
				if !hold.IsZero() && hold.Before(body) {
					body = hold
				}
				_ = d.SetReadDeadline(body)
				r.Body = &deadlineBody{ReadCloser: r.Body, d: d, after: hold}
			case !hold.IsZero():
				_ = d.SetReadDeadline(hold)
			}
		}
	}
	if b.MaxBodyBytes > 0 && hasBody {
		if r.ContentLength > b.MaxBodyBytes {
			refuse(w, r, http.StatusRequestEntityTooLarge)
			return false
		}
		// MaxBytesReader gets the server's writer so that it can close the
		// connection after an oversized body.
		r.Body = http.MaxBytesReader(w.ResponseWriter, r.Body, b.MaxBodyBytes)
	}
	return true
}

// settle frees what admission took and counts the request's one outcome: the
// outcome admission left pending (a shadow would_* or store_error) if any,
// otherwise the class of the answer.
func (h *handler) settle(r *http.Request, t *ticket, pending Outcome, status int) {
	d, g := h.door, h.group
	// Charge a shared store before freeing the slot: the slot counts toward
	// the client's held tokens, so a request arriving meanwhile cannot pass
	// on the token this one is about to spend.
	if t.storeHeld && status >= 400 && status < 500 {
		h.chargeShared(r, t)
	}
	g.settle(t, status, d.now)
	o := pending
	if o == OutcomeOK {
		switch {
		case status >= 500:
			o = OutcomeServerError
		case status >= 400:
			o = OutcomeClientError
		}
	}
	g.count(t, o)
}
