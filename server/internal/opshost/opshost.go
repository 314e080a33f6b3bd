package opshost

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
)

// Refusal is the body of the 421 answer. It names the flag that adds a
// name, which the proxy and admit rls spell alike.
const Refusal = "admit: this listener answers to an IP address, localhost, a name under .localhost or a name of --admin-host only\n"

// Handler answers 421 to a request whose Host is not one of the
// listener's names, and passes every other request to Next. Its fields do
// not change once it serves; it is safe for concurrent use.
type Handler struct {
	Next http.Handler
	// Names are the names the listener answers to beyond the built-in
	// ones, as ParseNames returns them; nil: none.
	Names []string
	// Refused is called once for each request refused; nil: none.
	Refused func()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if Allowed(r.Host, h.Names) {
		h.Next.ServeHTTP(w, r)
		return
	}
	if h.Refused != nil {
		h.Refused()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusMisdirectedRequest)
	io.WriteString(w, Refusal)
}

// Allowed reports whether host, a request's Host with or without a port,
// is one of a listener's names: an IP literal (IPv6 in brackets), localhost
// or a name under .localhost, or one of names, in any case and with or
// without a trailing dot.
func Allowed(host string, names []string) bool {
	h, ok := cutPort(host)
	if !ok {
		return false
	}
	// An address with a zone ("%eth0") names no host a client reaches
	// over HTTP, and a zone may hold any byte, a space or a slash: refused.
	if inner, bracketed := strings.CutPrefix(h, "["); bracketed {
		a, err := netip.ParseAddr(strings.TrimSuffix(inner, "]"))
		return err == nil && a.Is6() && a.Zone() == "" && strings.HasSuffix(inner, "]")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	h, ok = normalise(h)
	if !ok {
		return false
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	for _, n := range names {
		if h == n {
			return true
		}
	}
	return false
}

// cutPort returns host without its port: the part before the last colon
// when a port of digits follows it (or nothing: RFC 3986 allows an empty
// port), the whole of a bracketed IPv6 literal, or host as it is when it
// holds no colon, or more than one outside brackets (a bare IPv6 address,
// which Allowed then parses).
func cutPort(host string) (string, bool) {
	i := strings.LastIndexByte(host, ':')
	switch {
	case i < 0:
		return host, true
	case strings.HasPrefix(host, "["):
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return "", false
		}
		if end == len(host)-1 {
			return host, true
		}
		if i != end+1 {
			return "", false
		}
	case strings.Count(host, ":") > 1:
		return host, true
	}
	port := host[i+1:]
	if len(port) > 5 || strings.Trim(port, "0123456789") != "" {
		return "", false
	}
	return host[:i], true
}

// normalise lower-cases a host name and drops one trailing dot, reporting
// false when it is not one: labels of ASCII letters, digits, '-' and '_',
// none empty, at most 253 bytes in all.
func normalise(name string) (string, bool) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return "", false
	}
	b := []byte(name)
	label := 0
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case c == '.' && label > 0:
			label = 0
			continue
		default:
			return "", false
		}
		if label++; label > 63 {
			return "", false
		}
	}
	if label == 0 {
		return "", false
	}
	return string(b), true
}

// ErrName is wrapped by ParseNames's errors.
var ErrName = errors.New("want host names such as admit.internal, without scheme or port, comma or space separated")

// ParseNames reads names given to --admin-host, comma or space separated,
// into the form Allowed compares: lower case, without a trailing dot. Its
// error names the name it refuses when v holds several.
func ParseNames(v string) ([]string, error) {
	var out []string
	fields := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	for _, f := range fields {
		n, ok := normalise(f)
		if !ok && len(fields) == 1 {
			return nil, ErrName // the caller names the value
		}
		if !ok {
			return nil, fmt.Errorf("%q: %w", f, ErrName)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, ErrName
	}
	return out, nil
}
