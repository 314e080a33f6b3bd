package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
)

// errHeadTooLarge is the cause when a response head, with any 1xx heads
// before it, is over the limit.
var errHeadTooLarge = errors.New("upstream: response headers too large")

// readBlock reads from br one block of lines ended by an empty line (a
// response head, or a chunked body's trailer section), at most limit bytes,
// and returns it as one string, the empty line included: every header name
// and value read from it is a piece of that one allocation. A block that
// fits br's buffer is read in place; a longer one is gathered in *spill.
// Nothing read: io.EOF.
func readBlock(br *bufio.Reader, limit int, spill *[]byte) (string, error) {
	scanned := 0
	for {
		n := br.Buffered()
		p, _ := br.Peek(n)
		if end := blockEnd(p, scanned); end > 0 {
			if end > limit {
				return "", errHeadTooLarge
			}
			s := string(p[:end])
			_, _ = br.Discard(end)
			return s, nil
		}
		if n >= limit {
			return "", errHeadTooLarge
		}
		if n == br.Size() {
			return readLongBlock(br, limit, spill)
		}
		scanned = max(n-2, 0)
		if _, err := br.Peek(n + 1); err != nil {
			if n > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
}

// readLongBlock is readBlock for a block longer than br's buffer.
func readLongBlock(br *bufio.Reader, limit int, spill *[]byte) (string, error) {
	b := (*spill)[:0]
	defer func() { *spill = b[:0] }()
	for {
		from := max(len(b)-2, 0)
		chunk, err := br.ReadSlice('\n')
		b = append(b, chunk...)
		if end := blockEnd(b, from); end > 0 {
			return string(b[:end]), nil
		}
		if len(b) >= limit {
			return "", errHeadTooLarge
		}
		if err != nil && err != bufio.ErrBufferFull {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
}

// blockEnd returns the length of the block p starts with, through the empty
// line that ends it, or 0 when p holds no empty line yet; from is where a
// previous search of a shorter p stopped.
func blockEnd(p []byte, from int) int {
	if from == 0 {
		switch {
		case bytes.HasPrefix(p, []byte("\n")):
			return 1
		case bytes.HasPrefix(p, []byte("\r\n")):
			return 2
		}
	}
	for i := from; i < len(p); {
		j := bytes.IndexByte(p[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		switch {
		case i < len(p) && p[i] == '\n':
			return i + 1
		case i+1 < len(p) && p[i] == '\r' && p[i+1] == '\n':
			return i + 2
		}
	}
	return 0
}

// body reads a response body as its head frames it, from the connection's
// reader. done reports whether it was read to its framed end, which a
// connection needs before it can carry another request.
type body struct {
	br      *bufio.Reader
	left    int64     // bytes left of a Content-Length body
	chunks  io.Reader // a chunked body's decoder; nil: not chunked
	toClose bool      // the body ends when the upstream closes
	done    bool
}

func (b *body) Read(p []byte) (int, error) {
	switch {
	case b.done:
		return 0, io.EOF
	case b.chunks != nil:
		n, err := b.chunks.Read(p)
		if err == io.EOF {
			b.done = true
		}
		return n, err
	case b.toClose:
		n, err := b.br.Read(p)
		b.done = err == io.EOF
		return n, err
	}
	if b.left == 0 {
		b.done = true
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the upstream closed before the length it gave
	}
	return n, err
}

// frame sets b up to read the body of a response with head h to a request
// of method.
func (b *body) frame(br *bufio.Reader, h *head, method string) {
	*b = body{br: br}
	switch {
	case method == "HEAD" || h.status == 204 || h.status == 304:
		b.done = true
	case h.chunked:
		b.chunks = httputil.NewChunkedReader(br)
	case h.length >= 0:
		b.left = h.length
		b.done = h.length == 0
	default:
		b.toClose = true
	}
}

// trailers reads the trailer section after a chunked body, at most limit
// bytes, into fields.
func (b *body) trailers(limit int, spill *[]byte, fields []field) ([]field, error) {
	s, err := readBlock(b.br, limit, spill)
	if err != nil {
		return fields, fmt.Errorf("upstream: trailers: %w", err)
	}
	return parseFields(s, fields)
}
