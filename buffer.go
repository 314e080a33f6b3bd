package admit

import (
	"errors"
	"io"
	"math"
	"net/http"
)

// What buffered did with a request.
const (
	serve    = iota // its body has arrived and it holds its groups' slots
	answered        // the door answered it (408, 400 or 413); it settles as admitted
	refused         // refused 503; what admission took is given back
)

// minBuffer is the memory a buffered body starts with, whatever length it
// declares: a client that declares a megabyte and sends a byte has no more
// memory set aside for it than it sent, within a factor of two.
const minBuffer = 512

// buffered reads r's whole body, at most the route's cap, then takes the
// slots of the groups admission left unslotted (Route.Buffer). While it
// reads, each limit's group counts the memory the body holds against a
// bound of its Inflight times its MaxBodyBytes, so the bodies still
// arriving hold a bounded amount however many clients send them slowly; a
// body that would pass it is refused 503, as is a request that finds a
// group full once its body is whole. A body cut by its rule is answered
// with the status that says why, and one over the cap 413; both settle as
// admitted, and so are the client's failure. On serve r.Body reads what
// arrived, and held is what the body still counts on its groups, which the
// caller gives back with release once the request has been served.
//
// Enforcing, a body stops counting once its request has its slots, which
// bound it from then on. In shadow mode a request its group would refuse
// takes no slot, so its body counts until it has been served: otherwise
// the bodies of shadow requests would pass the bound while an upstream
// keeps them waiting.
func (h *handler) buffered(w *writer, r *http.Request, tickets []ticket, verdicts []verdict) (next int, held int64) {
	body, held, full, err := h.readBody(r)
	if !h.shadow || err != nil {
		h.release(held)
		held = 0
	}
	switch {
	case full >= 0 && h.shadow:
		// Shadow mode refuses nothing: the rest of the body streams, its
		// length as the client framed it; its 100 is sent already.
		r.Body = &bufferedBody{bytesReader: body, rest: r.Body, body: r.Body}
		delete(r.Header, "Expect")
		if verdicts[full].outcome == outcomeOK {
			verdicts[full].outcome = outcomeGroupConcurrency.would()
		}
		return serve, held
	case full >= 0:
		h.giveBack(w.ResponseWriter, r, tickets, full)
		return refused, 0
	}
	if err != nil {
		status := w.cut()
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			status = http.StatusRequestEntityTooLarge
		case status == 0:
			status = http.StatusBadRequest // read without a rule, and failed
		}
		writeRefusal(w, r, h.limits[0], status)
		return answered, 0
	}
	r.Body = &bufferedBody{bytesReader: body, body: r.Body}
	// The request now says what its body is: its length (unless it has
	// trailers), so that a proxy can forward it framed as such, and no Expect, whose 100 net/http sent
	// when the body was first read; forwarded, it would have a proxy wait
	// for its upstream's 100 and relay it, a second one to the client.
	r.ContentLength, r.TransferEncoding = int64(len(body.b)), nil
	if len(r.Trailer) > 0 {
		// Trailers go only with a chunked body: unsized, it is sent so.
		r.ContentLength = -1
	}
	delete(r.Header, "Expect")
	for i, g := range h.limits {
		t := &tickets[i]
		if !t.taken || !t.unslotted {
			continue // admitted in shadow mode without taking anything
		}
		if !g.takeSlot() {
			if h.shadow {
				if verdicts[i].outcome == outcomeOK {
					verdicts[i].outcome = outcomeGroupConcurrency.would()
				}
				continue
			}
			// Its body is whole, so an overflow handler may serve it
			// as it serves a request refused at the head.
			h.cancel(r.Context(), tickets)
			h.refuse(w.ResponseWriter, r, g, t, verdict{outcome: outcomeGroupConcurrency, retry: 1}, nil)
			return refused, 0
		}
		t.unslotted = false
	}
	return serve, held
}

// readBody reads r's body into memory, counted on each limit's group, and
// returns it with the bytes counted; full is the limit whose group's bound
// it reached, with what was read until then, or -1.
func (h *handler) readBody(r *http.Request) (body *bytesReader, held int64, full int, err error) {
	n := minBuffer
	if r.ContentLength >= 0 {
		n = int(min(r.ContentLength, minBuffer))
	}
	buf := make([]byte, 0, max(n, 1))
	if full = h.reserve(int64(cap(buf))); full >= 0 {
		return &bytesReader{}, 0, full, nil
	}
	held = int64(cap(buf))
	for {
		if len(buf) == cap(buf) {
			grow := int64(min(2*cap(buf), int(h.maxBody)+1) - cap(buf))
			if grow <= 0 {
				grow = 1
			}
			if full = h.reserve(grow); full >= 0 {
				return &bytesReader{b: buf}, held, full, nil
			}
			held += grow
			buf = append(make([]byte, 0, int64(cap(buf))+grow), buf...)
		}
		m, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		switch {
		case err == io.EOF:
			return &bytesReader{b: buf}, held, -1, nil
		case err != nil:
			return nil, held, -1, err
		}
	}
}

// reserve counts n more bytes on every limit's group, and returns -1, or,
// counting nothing, the limit whose group it would take past its bound.
func (h *handler) reserve(n int64) int {
	for i, g := range h.limits {
		if g.buffered.Add(n) > g.bufferBound() {
			for _, g := range h.limits[:i+1] {
				g.buffered.Add(-n)
			}
			return i
		}
	}
	return -1
}

// release gives back n bytes counted on every limit's group.
func (h *handler) release(n int64) {
	if n == 0 {
		return
	}
	for _, g := range h.limits {
		g.buffered.Add(-n)
	}
}

// giveBack undoes the admission of a buffered request whose body met the
// bound on bodies being read of limit i's group, and answers it 503 in
// that group's name, as the group's cap does.
func (h *handler) giveBack(w http.ResponseWriter, r *http.Request, tickets []ticket, i int) {
	h.cancel(r.Context(), tickets)
	g := h.limits[i]
	status := h.refused(w.Header(), g, &tickets[i], verdict{outcome: outcomeGroupConcurrency, retry: 1})
	writeRefused(w, r, g, status, outcomeGroupConcurrency, 1, nil)
	h.tell(r, g, outcomeGroupConcurrency, status)
}

// bufferBound is how many bytes the bodies a group's buffered requests are
// reading may hold at once: as many as its admitted bodies may. A group
// without a body cap, or whose bound would pass int64, bounds nothing
// itself: a route buffers only under a cap, so another of its groups
// bounds the body.
func (g *group) bufferBound() int64 {
	b := g.budget
	if b.MaxBodyBytes <= 0 || b.MaxBodyBytes > math.MaxInt64/int64(b.Inflight) {
		return math.MaxInt64
	}
	return int64(b.Inflight) * b.MaxBodyBytes
}

// bytesReader reads a buffered body.
type bytesReader struct {
	b []byte
}

func (r *bytesReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// bufferedBody is a body read ahead: its bytes, then the rest when it was
// not read whole, and the request's body, which Close closes.
type bufferedBody struct {
	*bytesReader
	rest io.Reader // nil: the body was read whole
	body io.ReadCloser
}

func (b *bufferedBody) Read(p []byte) (int, error) {
	n, err := b.bytesReader.Read(p)
	if err == io.EOF && b.rest != nil {
		return b.rest.Read(p)
	}
	return n, err
}

func (b *bufferedBody) Close() error { return b.body.Close() }
