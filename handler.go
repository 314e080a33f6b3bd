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
		if h.overflow != nil {
			g.count(&t, OutcomeCached)
			h.overflow.ServeHTTP(w, r)
			return
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
	h.settle(r, &t, v.outcome, ww.answered())
}

// prepare applies the group's body deadline and cap. The deadline covers
// reading the body only: net/http cancels the request's context when a read
// deadline passes, so it is lifted once the body has been read, and a handler
// that acknowledges early keeps its context while it works. It answers 413 itself,
// and returns false, when the declared body is over the cap; the answer then
// settles like a handler's 4xx, so it costs a charge-on-failure client a token.
func (h *handler) prepare(w *writer, r *http.Request) bool {
	b := &h.group.budget
	hasBody := r.Body != nil && r.Body != http.NoBody
	if b.ReadTimeout > 0 && hasBody {
		if rd := findReadDeadliner(w.ResponseWriter); rd != nil {
			_ = rd.SetReadDeadline(time.Now().Add(b.ReadTimeout))
			r.Body = &deadlineBody{ReadCloser: r.Body, rd: rd}
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
