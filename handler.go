package admit

import (
	"net/http"
	"sync"
	"time"
)

// handler is what Wrap returns: one group's door in front of next.
type handler struct {
	group    *group
	next     http.Handler
	overflow http.Handler
}

// ServeHTTP reads as the door works: key the request, admit it (the group's
// caps and its engine's token), refuse it or serve it, then settle what
// admission took.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := h.group
	t, v := g.admit(r.Context(), g.set.key(r), g.set.now())
	if v.evicted {
		g.shards[t.shard].counts.evictions.Add(1)
	}
	if !v.admitted {
		h.refuse(w, r, &t, v)
		return
	}
	if g.set.headers && t.taken {
		setPolicyHeaders(w.Header(), g, v.left, v.reset)
	}
	ww := writers.Get().(*writer)
	ww.ResponseWriter = w
	settled := false
	defer func() {
		// A panic in the handler: free what admission took, charge an
		// answer the client already got, and let it unwind. The writer is
		// not reused, since the panic may leave it referenced.
		if !settled {
			status := http.StatusInternalServerError
			if ww.status != 0 {
				status = ww.status
			}
			ww.release()
			h.settle(r, &t, v.outcome, status)
		}
	}()
	if h.prepare(ww, r) {
		h.next.ServeHTTP(ww, r)
	}
	settled = true
	ww.release()
	h.settle(r, &t, v.outcome, ww.answered())
	*ww = writer{}
	writers.Put(ww)
}

// writers recycles the status-recording writers of admitted requests, so
// the allowed path allocates nothing: net/http forbids using a
// ResponseWriter after ServeHTTP returns, so a writer is free once its
// request has settled.
var writers = sync.Pool{New: func() any { return new(writer) }}

// refuse answers a request admission refused, with the overflow handler when
// there is one and it has a free slot, or with 429 or 503 and Retry-After.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, t *ticket, v verdict) {
	g := h.group
	if h.overflow != nil {
		if g.takeOverflow() {
			g.count(t, outcomeCached)
			h.serveOverflow(w, r)
			return
		}
		v.outcome, v.retry = outcomeGroupConcurrency, 1 // the overflow is at the group's cap
	}
	g.count(t, v.outcome)
	status := http.StatusTooManyRequests
	if v.outcome == outcomeGroupConcurrency || v.outcome == outcomeStoreError {
		status = http.StatusServiceUnavailable
	}
	if g.set.headers && v.outcome == outcomeRateLimited {
		setPolicyHeaders(w.Header(), g, 0, v.reset)
	}
	rejectWith(w, r, status, v.retry)
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
func (h *handler) settle(r *http.Request, t *ticket, pending outcome, status int) {
	g := h.group
	if t.taken {
		g.engine.settle(r.Context(), *t, status)
	}
	o := pending
	if o == outcomeOK {
		switch {
		case status >= 500:
			o = outcomeServerError
		case status >= 400:
			o = outcomeClientError
		}
	}
	g.count(t, o)
}
