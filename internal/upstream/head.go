package upstream

import (
	"errors"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// errMalformed is the cause of every response head the direct path refuses
// to read; the proxy answers 502, never a guess at what the upstream meant.
var errMalformed = errors.New("upstream: malformed response")

// field is one header line of a response head.
type field struct{ name, value string }

// head is a response head as the direct path reads it: the status, the
// header lines in their order, and what frames the body. Every string is a
// piece of the one string the head was read into.
type head struct {
	status  int
	fields  []field
	length  int64 // the Content-Length; -1: none given
	chunked bool  // Transfer-Encoding: chunked
	close   bool  // the upstream closes the connection after this response
}

// parseHead reads a response head: the status line and the header lines,
// each ended by CRLF or LF, then an empty line. It is stricter than
// http.ReadResponse, never more lenient: it refuses what a smuggler or a
// broken upstream would send (a folded line, a control byte, a name that is
// not a token, two framings, a Transfer-Encoding other than chunked or on
// HTTP/1.0, Content-Lengths that disagree, a status outside 100 to 999).
// fields is reused for the header lines.
func parseHead(s string, fields []field) (h head, err error) {
	h = head{fields: fields[:0], length: -1}
	line, rest, ok := cutLine(s)
	if !ok {
		return h, errMalformed
	}
	var minor int
	switch {
	case strings.HasPrefix(line, "HTTP/1.1 "):
		minor = 1
	case strings.HasPrefix(line, "HTTP/1.0 "):
	default:
		return h, errMalformed
	}
	code := strings.TrimLeft(line[len("HTTP/1.x "):], " ")
	if len(code) < 3 || (len(code) > 3 && code[3] != ' ') || !validText(code[3:]) {
		return h, errMalformed
	}
	for i := range 3 {
		if code[i] < '0' || code[i] > '9' {
			return h, errMalformed
		}
		h.status = h.status*10 + int(code[i]-'0')
	}
	if h.status < 100 {
		return h, errMalformed
	}
	if h.fields, err = parseFields(rest, fields); err != nil {
		return h, err
	}
	var te int
	var length string // the first Content-Length; others must spell it alike, as net/http asks
	for _, f := range h.fields {
		switch f.name {
		case "Content-Length":
			n, ok := parseLength(f.value)
			if !ok || (h.length >= 0 && f.value != length) {
				return h, errMalformed
			}
			h.length, length = n, f.value
		case "Transfer-Encoding":
			te++
			h.chunked = strings.EqualFold(f.value, "chunked")
			if te > 1 || !h.chunked || minor == 0 {
				return h, errMalformed
			}
		}
	}
	if h.chunked && h.length >= 0 {
		return h, errMalformed
	}
	h.close = listed(h.fields, "Connection", "close") ||
		(minor == 0 && !listed(h.fields, "Connection", "keep-alive"))
	return h, nil
}

// listed reports whether a header line named name lists token, as
// Connection lists options and hop-by-hop headers.
func listed(fields []field, name, token string) bool {
	for _, f := range fields {
		if f.name == name && httpguts.HeaderValuesContainsToken([]string{f.value}, token) {
			return true
		}
	}
	return false
}

// parseFields reads header lines up to the empty line that ends them and
// the block, appending them to fields with canonical names and values
// without surrounding white space.
func parseFields(s string, fields []field) ([]field, error) {
	for {
		line, rest, ok := cutLine(s)
		if !ok {
			return fields, errMalformed
		}
		if line == "" {
			if rest != "" {
				return fields, errMalformed
			}
			return fields, nil
		}
		s = rest
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validName(name) {
			return fields, errMalformed
		}
		value = strings.Trim(value, " \t")
		if !validText(value) {
			return fields, errMalformed
		}
		fields = append(fields, field{http.CanonicalHeaderKey(name), value})
	}
}

// cutLine returns the first line of s without its CRLF or LF, and the rest.
// A line needs its end: ok is false when s has none.
func cutLine(s string) (line, rest string, ok bool) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return "", s, false
	}
	line, rest = s[:i], s[i+1:]
	return strings.TrimSuffix(line, "\r"), rest, true
}

// validName reports whether s is a header name: a non-empty token.
func validName(s string) bool {
	return s != "" && httpguts.ValidHeaderFieldName(s)
}

// validText reports whether s holds no control byte but tab, as a field
// value and a reason phrase must.
func validText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// parseLength parses a Content-Length: decimal digits, below 2^63.
func parseLength(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}
