package upstream

import (
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/admitgo/admit/internal/hop"
)

// answer copies the answer whose head h roundTrip read on c to w: the
// header, the body, the trailers. c goes back to the pool when the body was
// read to its framed end, the upstream keeps the connection, the answer
// leaves it fit for another request (unfit), nothing more came on it and
// the client did not go away (stop reports that the interrupt never ran);
// otherwise it is closed.
func (d *Direct) answer(w http.ResponseWriter, r *http.Request, c *conn, x *exchange, h *head, stop func() bool) error {
	announced, err := announcedTrailers(h)
	if err != nil {
		stop()
		c.nc.Close()
		return err
	}
	hdr := w.Header()
	copyFields(hdr, h.fields)
	if announced != "" {
		hdr["Trailer"] = append(hdr["Trailer"], announced)
	}
	var b body
	b.frame(x.br, h, r.Method)
	// Flush what comes as it comes when the client cannot know where the
	// body ends, or waits for events, as httputil.ReverseProxy does, the
	// head at once.
	stream := !b.done && (h.length < 0 || eventStream(h.fields))
	w.WriteHeader(h.status)
	rc := http.NewResponseController(w)
	if stream {
		_ = rc.Flush()
	}
	err = copyBody(w, rc, &b, stream)
	var trailers []field
	if err == nil && b.chunks != nil {
		trailers, err = b.trailers(x.br.Size(), &x.spill, x.fields[:0])
	}
	if stop() && err == nil && !h.close && !b.toClose && x.br.Buffered() == 0 &&
		unfit(r.Method, h.status, h.length, h.chunked) == "" {
		x.br.Reset(nil)
		d.pool.put(c)
	} else {
		c.nc.Close()
	}
	if err != nil {
		if r.Context().Value(http.ServerContextKey) != nil {
			panic(http.ErrAbortHandler)
		}
		return err
	}
	if announced != "" || len(trailers) > 0 {
		// Chunk the answer, so that net/http does not give it a length
		// and leave no room for trailers.
		_ = rc.Flush()
	}
	for _, f := range trailers {
		if !httpguts.HeaderValuesContainsToken([]string{announced}, f.name) {
			f.name = http.TrailerPrefix + f.name
		}
		hdr[f.name] = append(hdr[f.name], f.value)
	}
	return nil
}

// copyBody copies b to w, through a pooled buffer, flushing each write when
// stream is set.
func copyBody(w http.ResponseWriter, rc *http.ResponseController, b *body, stream bool) error {
	if b.done {
		return nil
	}
	buf := copyBuffers.Get()
	defer copyBuffers.Put(buf)
	for {
		n, rerr := b.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if stream {
				if err := rc.Flush(); err != nil {
					return err
				}
			}
		}
		if b.done {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

var copyBuffers = BufferPool()

// copyFields adds the fields but the hop-by-hop ones, and those the head's
// Connection lines name, to hdr, in one allocation for their values.
func copyFields(hdr http.Header, fields []field) {
	n := 0
	for _, f := range fields {
		if !hopField(fields, f.name) {
			n++
		}
	}
	values := make([]string, n)
	i := 0
	for _, f := range fields {
		if hopField(fields, f.name) {
			continue
		}
		if old, ok := hdr[f.name]; ok {
			hdr[f.name] = append(old, f.value)
			continue
		}
		values[i] = f.value
		hdr[f.name] = values[i : i+1 : i+1]
		i++
	}
}

// hopField reports whether name is a hop-by-hop header of a head with fields.
func hopField(fields []field, name string) bool {
	return hop.Header(name) || listed(fields, "Connection", name)
}

// announcedTrailers returns the trailers a chunked answer's Trailer lines
// announce, canonical and comma-separated, as the client is told of them;
// net/http's Transport refuses a head that announces a framing field.
func announcedTrailers(h *head) (string, error) {
	if !h.chunked {
		return "", nil
	}
	var names []string
	for _, f := range h.fields {
		if f.name != "Trailer" {
			continue
		}
		for name := range strings.SplitSeq(f.value, ",") {
			if name = http.CanonicalHeaderKey(strings.Trim(name, " \t")); name == "" {
				continue
			}
			switch name {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				return "", errMalformed
			}
			names = append(names, name)
		}
	}
	return strings.Join(names, ", "), nil
}

// eventStream reports whether the answer is server-sent events: a
// Content-Type of text/event-stream, with or without parameters.
func eventStream(fields []field) bool {
	for _, f := range fields {
		if f.name == "Content-Type" {
			t, _, _ := strings.Cut(f.value, ";")
			return strings.EqualFold(strings.Trim(t, " \t"), "text/event-stream")
		}
	}
	return false
}

// relay1xx passes a 1xx answer on to the client: its fields go out
// with it and leave the header map as it was, so that what the door set for
// the final answer stays.
func relay1xx(w http.ResponseWriter, h *head) {
	hdr := w.Header()
	saved := make(map[string][]string)
	for _, f := range h.fields {
		if hopField(h.fields, f.name) {
			continue
		}
		if _, ok := saved[f.name]; !ok {
			saved[f.name] = hdr[f.name]
			delete(hdr, f.name)
		}
	}
	copyFields(hdr, h.fields)
	w.WriteHeader(h.status)
	for name, old := range saved {
		if old == nil {
			delete(hdr, name)
		} else {
			hdr[name] = old
		}
	}
}
