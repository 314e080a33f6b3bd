package admit

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/admitgo/admit/internal/bodyrate"
)

// pooledLimits is how many limits a pass holds without allocating: as
// many as a route of the server's configuration stacks. A handler of more
// (the server's, for a request whose spellings match several routes)
// allocates its request's.
const pooledLimits = 8

// handler is what Handler returns: a route's limits in front of next.
type handler struct {
	limits   []*group // in the route's order; 1 or more, each a group of the door once
	cost     int32    // what a request spends in each limit
	next     http.Handler
	overflow http.Handler
	// The body cap, body rule and hold bound a request gets: the
	// strictest of its limits' (0: none).
	maxBody int64
	rule    bodyrate.Rule
	hold    time.Duration
	buffer  bool // read the body before taking the groups' slots (Route.Buffer)
	fields  bool // a limit sends rate-limit fields on admitted answers
	delays  bool // a limit has a Queue: requests may wait for their tokens
	shadow  bool
	now     func() int64
	decided func(r *http.Request, g Group, outcome string, status int) // nil: none
	waited  func(r *http.Request, g Group, wait time.Duration)         // nil: none
}

// ServeHTTP reads as the door works: key the request and admit it under
// each limit in order (the group's caps and its engine's tokens); on a
// refusal undo the limits before it and answer; otherwise serve it, then
// settle what admission took.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := passes.Get().(*pass)
	var client clientKey
	buffer := h.buffer && hasBody(r)
	if i, err := h.admitAll(r.Context(), r, r.Header, &client, buffer, p); err != nil {
		h.refuseKey(w, r, h.limits[i], err)
		passes.Put(p)
		return
	} else if i >= 0 && p.verdicts[i].outcome == outcomeDelayAbandoned {
		h.abandoned(r, h.limits[i], &p.tickets[i])
		passes.Put(p)
		return
	} else if i >= 0 {
		h.refuse(w, r, h.limits[i], &p.tickets[i], p.verdicts[i], p.fields[:0])
		passes.Put(p)
		return
	}
	tickets, verdicts := p.tickets, p.verdicts
	ww := &p.w
	ww.ResponseWriter = w
	if h.fields {
		ww.fields, ww.tickets, ww.verdicts = h, tickets, verdicts
	}
	settled := false
	var held int64 // a shadow request's buffered body, counted until it has been served
	defer func() {
		// A panic in the handler: free what admission took, charge an
		// answer the client already got, and let it unwind. The pass is
		// not reused, since the panic may leave its writer referenced.
		if !settled {
			h.release(held)
			status := http.StatusInternalServerError
			if ww.status != 0 {
				status = ww.status
			}
			h.settle(r.Context(), r, tickets, verdicts, status, ww.cut())
		}
	}()
	if h.prepare(ww, r, &p.body) {
		next := serve
		if buffer {
			next, held = h.buffered(ww, r, tickets, verdicts)
		}
		switch next {
		case serve:
			h.next.ServeHTTP(ww, r)
			h.release(held)
			held = 0
		case refused: // admission was undone, and the refusal counted
			settled = true
			p.w, p.body = writer{}, bodyrate.Reader{}
			passes.Put(p)
			return
		}
	}
	settled = true
	h.settle(r.Context(), r, tickets, verdicts, ww.answered(), ww.cut())
	p.w, p.body = writer{}, bodyrate.Reader{}
	passes.Put(p)
}

// admitAll admits a request under each limit in order, filling p's tickets
// and verdicts, and returns -1 when every limit admitted it. Otherwise it
// returns the limit that refused, having undone the limits before it, with
// the error that kept that limit from keying the request, if that is why;
// its verdict's outcome is delay_abandoned when the request's context
// ended while it waited for that limit's tokens. A limit that reserves
// tokens for the request to wait for (Budget.Queue) has the limits before
// it let go of theirs; once the wait is over, admission starts again from
// the first limit, each limit reserving at most once.
// r is nil for a request that is not HTTP; header holds the values limits
// are keyed by.
// With unslotted, the requests take no group slots yet (see buffered).
func (h *handler) admitAll(ctx context.Context, r *http.Request, header http.Header, client *clientKey, unslotted bool, p *pass) (int, error) {
	p.size(len(h.limits))
	tickets, verdicts := p.tickets, p.verdicts
	now := h.now()
	admitted := 0 // limits whose admission must be undone should a store panic
	defer func() {
		if admitted >= 0 { // a store panicked: undo the limits before it, and let it unwind
			h.undo(ctx, tickets, admitted)
		}
	}()
	for i := 0; i < len(h.limits); i++ {
		g := h.limits[i]
		admitted = i
		key, err := g.keyOf(r, header, client)
		if err != nil && h.shadow {
			// Shadow mode refuses nothing: this limit takes nothing and
			// counts what it would have answered; the others decide.
			tickets[i] = ticket{slot: -1}
			verdicts[i] = verdict{admitted: true, outcome: outcomeMissingKey.would()}
			continue
		}
		if err != nil {
			admitted = -1
			h.undo(ctx, tickets, i)
			return i, err
		}
		t := &tickets[i]
		if _, ok := g.exempt(r, key, client); ok {
			verdicts[i] = g.admitExempt(key, h.cost, unslotted, t)
		} else {
			verdicts[i] = g.admit(ctx, key, h.cost, now, unslotted, t)
		}
		if verdicts[i].evicted {
			g.shards[t.shard].counts.evictions.Add(1)
		}
		if wait := verdicts[i].wait; wait > 0 {
			if !h.waitFor(ctx, r, i, wait, p) {
				admitted = -1
				return i, nil
			}
			now = h.now()
			i = -1 // from the first limit again
			continue
		}
		if !verdicts[i].admitted {
			admitted = -1
			h.undo(ctx, tickets, i)
			return i, nil
		}
	}
	admitted = -1 // from here on, settling gives back what admission took
	return -1, nil
}

// pass is one request's way through the door: what each of its limits
// admitted and the status-recording writer. Passes are recycled, so the
// allowed path allocates nothing, and the engines take tickets by pointer
// without copying them on every call: net/http forbids using a
// ResponseWriter after ServeHTTP returns, so a pass is free once its
// request has settled or been refused. Every ticket a request uses is
// written by admission before it is read.
type pass struct {
	w writer
	// One per limit of the handler, in its order: the arrays' below, or
	// allocated for a handler of more limits than they hold (see size).
	tickets     []ticket
	verdicts    []verdict
	ticketsArr  [pooledLimits]ticket
	verdictsArr [pooledLimits]verdict
	fields      [refusalFieldsSize]byte // a refusal's header fields, for a server that writes them whole
	body        bodyrate.Reader         // the body, read under the route's rule
	waited      time.Duration           // how long the request waited for reserved tokens
}

// size readies p's tickets and verdicts for a handler of n limits, none
// of them holding a reservation of an earlier request.
func (p *pass) size(n int) {
	p.waited = 0
	if n <= pooledLimits {
		p.tickets, p.verdicts = p.ticketsArr[:n], p.verdictsArr[:n]
		for i := range p.tickets {
			p.tickets[i].reserved = false
		}
		return
	}
	p.tickets, p.verdicts = make([]ticket, n), make([]verdict, n)
}

// refusalFieldsSize holds a refusal's fields with a group name of a
// hundred bytes; a longer one makes appending them allocate.
const refusalFieldsSize = 384

var passes = sync.Pool{New: func() any { return new(pass) }}

// cancel undoes the admissions of the limits before one that refused, last
// first, so that one limit's refusal spends no other's budget.
func (h *handler) cancel(ctx context.Context, tickets []ticket) {
	for i := len(tickets) - 1; i >= 0; i-- {
		if t := &tickets[i]; t.taken {
			h.limits[i].cancel(ctx, t)
		}
	}
}

// tell calls the door's Decided hook, if it has one.
func (h *handler) tell(r *http.Request, g *group, o outcome, status int) {
	if h.decided != nil {
		h.decided(r, g.name, o.String(), status)
	}
}

// serveOverflow serves a request over budget with the overflow handler,
// under the same body cap, deadlines and hold bound as an admitted request,
// in one of the refusing limit's overflow slots, and returns the status it
// answered.
func (h *handler) serveOverflow(w http.ResponseWriter, r *http.Request, g *group) int {
	ww := &writer{ResponseWriter: w}
	defer g.overflow.Add(-1)
	if h.prepare(ww, r, new(bodyrate.Reader)) {
		h.overflow.ServeHTTP(ww, r)
	}
	return ww.answered()
}

// prepare applies the route's body rule and cap and its hold bound. The
// body's rule (its deadline and minimum rate, see bodyrate) covers reading
// the body only: net/http cancels the request's context when a read
// deadline passes, so once the body has been read the read deadline moves
// on to the hold bound (or is lifted), and a handler that acknowledges
// early keeps its context while it works, up to the bound. body is the
// reader the rule is applied by. It answers 413 itself, and returns false,
// when the declared body is over the cap; the answer then settles like a
// handler's 4xx, so it costs a charge-on-failure client its tokens.
func (h *handler) prepare(w *writer, r *http.Request, body *bodyrate.Reader) bool {
	withBody := hasBody(r)
	if h.hold > 0 || (!h.rule.IsZero() && withBody) {
		if d := findDeadliner(w.ResponseWriter); d != nil {
			var hold time.Time
			if h.hold > 0 {
				hold = time.Now().Add(h.hold)
				_ = d.SetWriteDeadline(hold)
				w.hold = hold
			}
			switch {
			case !h.rule.IsZero() && withBody:
				body.Reset(r.Body, d, h.rule, hold, hold, expectsContinue(r), nil)
				r.Body, w.body = body, body
			case !hold.IsZero():
				_ = d.SetReadDeadline(hold)
			}
		}
	}
	if h.maxBody > 0 && withBody {
		if r.ContentLength > h.maxBody {
			writeRefusal(w, r, h.limits[0], http.StatusRequestEntityTooLarge)
			return false
		}
		// MaxBytesReader gets the server's writer so that it can close the
		// connection after an oversized body.
		r.Body = http.MaxBytesReader(w.ResponseWriter, r.Body, h.maxBody)
	}
	return true
}

// hasBody reports whether r has a body to read.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody
}

// expectsContinue reports a request whose client waits for a 100 before
// it sends its body.
func expectsContinue(r *http.Request) bool {
	v, ok := r.Header["Expect"]
	return ok && len(v) == 1 && strings.EqualFold(v[0], "100-continue")
}

// settle frees what admission took, last limit first, and counts the
// request's one outcome on each limit: the outcome admission left pending
// (a shadow would_* or store_error) if any, otherwise the class of the
// answer. A request whose body was cut (cut, the status that says why,
// see bodyrate) failed by its client's doing, whatever the client was
// answered: it counts as body_cut and settles as that status, a 4xx, so a
// charge-on-failure client pays for it. r is nil for a request that is not
// HTTP.
func (h *handler) settle(ctx context.Context, r *http.Request, tickets []ticket, verdicts []verdict, status, cut int) {
	charged := status
	if cut != 0 {
		charged = cut
	}
	for i := len(tickets) - 1; i >= 0; i-- {
		g, t := h.limits[i], &tickets[i]
		if t.taken {
			g.settle(ctx, t, charged)
		}
		o := verdicts[i].outcome
		if o == outcomeOK {
			switch {
			case cut != 0:
				o = outcomeBodyCut
			case status >= 500:
				o = outcomeServerError
			case status >= 400:
				o = outcomeClientError
			}
		}
		g.count(t, o)
		verdicts[i].outcome = o
	}
	// Told only once every limit has settled: a hook that panics must not
	// leave a limit's slots taken.
	if h.decided != nil {
		for i, g := range h.limits {
			h.decided(r, g.name, verdicts[i].outcome.String(), status)
		}
	}
}
