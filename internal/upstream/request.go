package upstream

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/admitgo/admit/internal/hop"
)

// Field is a header line the proxy adds to a request: a forwarding header.
type Field struct{ Name, Value string }

// ownHeaders are the request headers the direct path writes itself, as
// net/http's Transport does: from the target, the request's length, or
// (User-Agent) only the first line. The forwarding headers a proxy sets
// come in its own fields.
var ownHeaders = map[string]bool{
	"Host": true, "User-Agent": true, "Content-Length": true,
	"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
}

// appendRequest appends to b the request r becomes for the upstream, head
// and body, as httputil.ReverseProxy with Rewrite and SetURL and net/http's
// Transport would send it: the target's path and query joined to r's,
// unparsable query parameters dropped, the target's Host, r's headers but
// the hop-by-hop ones, those Connection names, those skip names and the
// forwarding headers, then extra, then the length.
func (d *Direct) appendRequest(b []byte, r *http.Request, extra []Field) ([]byte, error) {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = d.appendTarget(b, r.URL)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, d.host...)
	b = append(b, "\r\n"...)
	h := r.Header
	conn := h["Connection"]
	if ua := h["User-Agent"]; len(ua) > 0 && ua[0] != "" && !httpguts.HeaderValuesContainsToken(conn, "User-Agent") {
		if !httpguts.ValidHeaderFieldValue(ua[0]) {
			return b, fmt.Errorf("upstream: invalid header field value for %q", "User-Agent")
		}
		b = appendField(b, "User-Agent", ua[0])
	}
	for name, values := range h {
		if hop.Header(name) || ownHeaders[name] || (conn != nil && httpguts.HeaderValuesContainsToken(conn, name)) ||
			(d.skip != nil && d.skip(r, name)) {
			continue
		}
		if !httpguts.ValidHeaderFieldName(name) {
			return b, fmt.Errorf("upstream: invalid header field name %q", name)
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return b, fmt.Errorf("upstream: invalid header field value for %q", name)
			}
			b = appendField(b, name, v)
		}
	}
	// Tell an upstream that asks that trailers reach the client, as
	// httputil.ReverseProxy does when the client said it takes them.
	if httpguts.HeaderValuesContainsToken(h["Te"], "trailers") {
		b = append(b, "Te: trailers\r\n"...)
	}
	for _, f := range extra {
		if !httpguts.ValidHeaderFieldValue(f.Value) {
			return b, fmt.Errorf("upstream: invalid header field value for %q", f.Name)
		}
		b = appendField(b, f.Name, f.Value)
	}
	switch {
	case r.ContentLength > 0:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, r.ContentLength, 10)
		b = append(b, "\r\n"...)
	case r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH":
		b = append(b, "Content-Length: 0\r\n"...)
	}
	// The connection carries no request after a HEAD (see unfit): say
	// so, as net/http's Transport does for a request with Close set.
	if r.Method == "HEAD" {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	if r.ContentLength <= 0 {
		return b, nil
	}
	n := len(b)
	b = grow(b, int(r.ContentLength))
	if got, err := io.ReadFull(r.Body, b[n:]); err != nil {
		return b, fmt.Errorf("upstream: request body: %d of the %d bytes declared: %w", got, r.ContentLength, err)
	}
	return b, nil
}

// appendField appends a header line, its value without surrounding space.
func appendField(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, strings.Trim(value, " \t")...)
	return append(b, "\r\n"...)
}

// grow extends b by n bytes.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// appendTarget appends the request target: u's path joined to the target's
// as httputil.ProxyRequest.SetURL joins them, and the query, the target's
// first, without the parameters url.ParseQuery cannot read, as
// httputil.ReverseProxy drops them.
func (d *Direct) appendTarget(b []byte, u *url.URL) []byte {
	out := url.URL{Path: u.Path, RawPath: u.RawPath}
	out.Path, out.RawPath = joinPath(d.target, u)
	p := out.EscapedPath()
	if p == "" {
		p = "/"
	}
	b = append(b, p...)
	q := cleanQuery(u.RawQuery)
	if t := d.target.RawQuery; t != "" {
		if q != "" {
			q = t + "&" + q
		} else {
			q = t
		}
	}
	if q != "" || u.ForceQuery {
		b = append(b, '?')
		b = append(b, q...)
	}
	return b
}

// joinPath joins b's path to a's, with one slash between them, in both
// decoded and escaped forms.
func joinPath(a, b *url.URL) (path, rawPath string) {
	if a.RawPath == "" && b.RawPath == "" {
		return joinSlash(a.Path, b.Path), ""
	}
	ap, bp := a.EscapedPath(), b.EscapedPath()
	as, bs := strings.HasSuffix(ap, "/"), strings.HasPrefix(bp, "/")
	switch {
	case as && bs:
		return a.Path + b.Path[1:], ap + bp[1:]
	case !as && !bs:
		return a.Path + "/" + b.Path, ap + "/" + bp
	}
	return a.Path + b.Path, ap + bp
}

// joinSlash joins two paths with one slash between them.
func joinSlash(a, b string) string {
	as, bs := strings.HasSuffix(a, "/"), strings.HasPrefix(b, "/")
	switch {
	case as && bs:
		return a + b[1:]
	case !as && !bs:
		return a + "/" + b
	}
	return a + b
}

// cleanQuery returns q, or when it holds a semicolon or a broken escape,
// what url.ParseQuery reads of it, encoded again.
func cleanQuery(q string) string {
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return reencode(q)
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return reencode(q)
			}
			i += 2
		}
	}
	return q
}

func reencode(q string) string {
	v, _ := url.ParseQuery(q)
	return v.Encode()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
