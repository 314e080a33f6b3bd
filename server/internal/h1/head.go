package h1

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// head is a request head the engine reads itself: what net/http's server
// would put into the *http.Request.
type head struct {
	method, target string
	url            *url.URL
	header         http.Header
	host           string
	close          bool // Connection: close
	size           int  // bytes of the head, its blank line included
}

// crlf2 ends a head.
var crlf2 = []byte("\r\n\r\n")

// headStore is memory a head is read into besides its header map and the
// string its lines share, allocated with the request's writer rather than
// alone: the URL, and the fields' first values of a head of up to
// len(values) fields.
type headStore struct {
	url    url.URL
	values [8]string
}

// headSize returns the size of the whole head at the start of b, its blank
// line included, or -1 when b does not hold all of it.
func headSize(b []byte) int {
	end := bytes.Index(b, crlf2)
	if end < 0 {
		return -1
	}
	return end + len(crlf2)
}

// parseWhole reads a whole head, its blank line included, into st when
// it is plain (see the package documentation); ok is false for anything
// else, which net/http's server then reads. It never fails: a head it
// cannot take is net/http's to take or refuse.
func parseWhole(b []byte, st *headStore) (h head, ok bool) {
	end := len(b) - len(crlf2)
	h.size = len(b)
	lines := string(b[:end+2]) // every line with its CRLF; one string backs all of the head's strings
	line, rest, _ := strings.Cut(lines, "\r\n")
	if h.method, h.target, ok = requestLine(line); !ok {
		return head{}, false
	}
	if h.url, ok = parseTarget(h.target, &st.url); !ok {
		return head{}, false
	}
	n := strings.Count(rest, "\r\n")
	h.header = make(http.Header, n)
	// A field's first value, as textproto keeps them: one array for all.
	values := st.values[:]
	if n > len(values) {
		values = make([]string, n)
	}
	hosts := 0
	for rest != "" {
		line, rest, _ = strings.Cut(rest, "\r\n")
		name, value, ok := field(line)
		if !ok {
			return head{}, false
		}
		switch name {
		case "Host":
			if hosts++; hosts > 1 || !httpguts.ValidHostHeader(value) {
				return head{}, false
			}
			h.host = value
			continue
		case "Connection":
			if !strings.EqualFold(value, "close") && !strings.EqualFold(value, "keep-alive") {
				return head{}, false
			}
			h.close = h.close || strings.EqualFold(value, "close")
		case "Content-Length", "Transfer-Encoding", "Expect", "Upgrade", "Pragma", "Http2-Settings":
			return head{}, false
		}
		if vv, ok := h.header[name]; ok {
			h.header[name] = append(vv, value)
		} else {
			values[0] = value
			h.header[name], values = values[:1:1], values[1:]
		}
	}
	if hosts == 0 {
		return head{}, false
	}
	return h, true
}

// requestLine splits "METHOD SP TARGET SP HTTP/1.1", with a method that is a
// token, but CONNECT and PRI, and a target of printable ASCII that begins
// with a slash.
func requestLine(line string) (method, target string, ok bool) {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || proto != "HTTP/1.1" || method == "" || method == "CONNECT" || method == "PRI" {
		return "", "", false
	}
	for i := 0; i < len(method); i++ {
		if !httpguts.IsTokenRune(rune(method[i])) {
			return "", "", false
		}
	}
	if target == "" || target[0] != '/' {
		return "", "", false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f {
			return "", "", false
		}
	}
	return method, target, true
}

// field splits a header line "Name: value", with a name that is a token,
// canonical, and a value of printable ASCII and tabs, trimmed of spaces and
// tabs at both ends, as net/textproto reads it.
func field(line string) (name, value string, ok bool) {
	name, value, ok = strings.Cut(line, ":")
	if !ok || name == "" {
		return "", "", false
	}
	for i := 0; i < len(name); i++ {
		if !httpguts.IsTokenRune(rune(name[i])) {
			return "", "", false
		}
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c >= 0x7f {
			return "", "", false
		}
	}
	return http.CanonicalHeaderKey(name), strings.Trim(value, " \t"), true
}

// parseTarget returns the URL of a request target that requestLine took,
// as url.ParseRequestURI, which net/http's server calls, returns it. A
// target whose path holds only bytes that url.URL keeps as they are, and
// no escape, is a path and a query split at the first '?', read into u:
// the common request, read without ParseRequestURI's scheme, authority and
// escaping passes and its allocation. Any other goes to ParseRequestURI
// (FuzzTarget holds the two to the same URL). u must be zero.
func parseTarget(target string, u *url.URL) (*url.URL, bool) {
	path, query, hasQuery := strings.Cut(target, "?")
	for i := 0; i < len(path); i++ {
		if !pathByte[path[i]] {
			u, err := url.ParseRequestURI(target)
			return u, err == nil
		}
	}
	u.Path, u.RawQuery = path, query // u is new: its other fields are zero
	if hasQuery && query == "" && strings.IndexByte(target, '?') == len(target)-1 {
		u.ForceQuery = true // a lone '?' at the end
	}
	return u, true
}

// pathByte holds the bytes a URL's path keeps unescaped (url's
// shouldEscape for a path): letters, digits, and -_.~$&+,/:;=@.
var pathByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("-_.~$&+,/:;=@", byte(c)) >= 0
	}
	return t
}()
