package canon

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Class is a kind of spelling that common routers read differently from
// one another. A request that holds one is refused unless its class is
// allowed, as Spring Security's StrictHttpFirewall refuses them by default:
// there is no one reading of it that admit could match for every router.
type Class uint8

const (
	// PathParameter is a ';' or an encoded one (%3B) in the path. Servlet
	// containers strip ";name=value" from every segment before mapping,
	// and resolve "..;" as "..", so /l;x/abc and /x/..;/l/abc reach the
	// handler of /l/abc; a decoding hop turns %3B into ';'.
	PathParameter Class = 1 << iota
	// EncodedPercent is an encoded '%' (%25) in the path. A hop that
	// decodes the path before passing it on (nginx's proxy_pass with
	// $uri) turns %252F into %2F and %256C into %6C, which the app
	// decodes again.
	EncodedPercent
	// Control is an escape of a control character (%01 to %1F, %7F) in
	// the path, which some stacks strip or stop at. NUL is always refused.
	Control
	// NonASCII is a raw byte above 0x7F in the path, or escapes that do
	// not decode to UTF-8: decoders replace such bytes, or stop, each its
	// own way, so that two spellings become one path value.
	NonASCII
	// EncodedDelimiter is an encoded '?' or '#' (%3F, %23) in the path. A
	// hop that decodes the path (nginx's proxy_pass with $uri) sends it on
	// raw, so that the app routes /l/abc%3F/x as /l/abc with a query.
	EncodedDelimiter
	// BadHost is a Host header (or the authority of an absolute-form target)
	// that is not one host name or address with an optional port:
	// "x,example.com" is "x" to one framework and "example.com" to another.
	BadHost
)

// classes lists every class in the order of their names.
var classes = [...]Class{PathParameter, EncodedPercent, Control, NonASCII, EncodedDelimiter, BadHost}

// String returns the class as flags, the config file and metrics name it.
func (c Class) String() string {
	switch c {
	case PathParameter:
		return "path_parameter"
	case EncodedPercent:
		return "encoded_percent"
	case Control:
		return "control"
	case NonASCII:
		return "non_ascii"
	case EncodedDelimiter:
		return "encoded_delimiter"
	case BadHost:
		return "host"
	}
	return "unknown"
}

// Classes is a set of classes; the zero set allows none.
type Classes uint8

// Has reports whether c is in the set.
func (s Classes) Has(c Class) bool { return s&Classes(c) != 0 }

// String lists the set's classes as ParseClasses reads them; "none" for
// the empty set.
func (s Classes) String() string {
	var names []string
	for _, c := range classes {
		if s.Has(c) {
			names = append(names, c.String())
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// ParseClass reads one class as String spells it.
func ParseClass(v string) (Class, error) {
	for _, c := range classes {
		if v == c.String() {
			return c, nil
		}
	}
	names := make([]string, len(classes))
	for i, c := range classes {
		names[i] = c.String()
	}
	return 0, errors.New("want one of " + strings.Join(names, ", "))
}

// ParseClasses reads a list of classes separated by commas or spaces;
// "none" and the empty list are the empty set.
func ParseClasses(v string) (Classes, error) {
	var s Classes
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if f == "none" {
			continue
		}
		c, err := ParseClass(f)
		if err != nil {
			return 0, errors.New("class " + strconv.Quote(f) + ": " + err.Error())
		}
		s |= Classes(c)
	}
	return s, nil
}

// Errors for a request of a class that is not allowed; each becomes a 400.
var (
	ErrPathParameter  = errors.New("the path holds a ';' or %3B, which servlet containers strip as a path parameter")
	ErrEncodedPercent = errors.New("the path holds an encoded percent sign (%25), which a decoding hop would turn into another escape")
	ErrControl        = errors.New("the path holds an escaped control character")
	ErrNonASCII       = errors.New("the path holds a raw byte above 0x7F, or escapes that are not UTF-8")
	ErrHost           = errors.New("the Host is not one host name or address with an optional port")
	ErrDelimiter      = errors.New("the path holds an encoded '?' or '#' (%3F, %23), which a decoding hop would send on as a query or fragment")
)

// classErr is the error of each class.
func classErr(c Class) error {
	switch c {
	case PathParameter:
		return ErrPathParameter
	case EncodedPercent:
		return ErrEncodedPercent
	case Control:
		return ErrControl
	case NonASCII:
		return ErrNonASCII
	case EncodedDelimiter:
		return ErrDelimiter
	}
	return ErrHost
}

// escapeClass returns the class an escape of byte d belongs to, or 0.
func escapeClass(d byte) Class {
	switch {
	case d == ';':
		return PathParameter
	case d == '%':
		return EncodedPercent
	case d == '?' || d == '#':
		return EncodedDelimiter
	case d < 0x20 || d == 0x7f:
		return Control
	case d >= 0x80:
		return NonASCII
	}
	return 0
}

// checkPath returns the error of the first class in raw, a path as the
// request spells it, that allow does not let through. Escapes are read in
// either case; a '%' that starts no escape is Path's to refuse.
func checkPath(raw string, allow Classes) error {
	multibyte := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == ';':
			if !allow.Has(PathParameter) {
				return ErrPathParameter
			}
		case c >= 0x80:
			multibyte = true
		case c == '%' && i+2 < len(raw) && isHex(raw[i+1]) && isHex(raw[i+2]):
			d := unhex(raw[i+1])<<4 | unhex(raw[i+2])
			i += 2
			if cl := escapeClass(d); cl == NonASCII {
				multibyte = true
			} else if cl != 0 && !allow.Has(cl) {
				return classErr(cl)
			} else if cl == EncodedPercent {
				if err := checkHop(raw[i+1:], allow); err != nil {
					return err
				}
			}
		}
	}
	if !multibyte || allow.Has(NonASCII) {
		return nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] >= 0x80 {
			return ErrNonASCII
		}
	}
	// Only escaped bytes above 0x7F: they must decode to UTF-8. Short
	// paths decode on the stack.
	var buf [256]byte
	decoded := buf[:0]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' && i+2 < len(raw) && isHex(raw[i+1]) && isHex(raw[i+2]) {
			c = unhex(raw[i+1])<<4 | unhex(raw[i+2])
			i += 2
		}
		decoded = append(decoded, c)
	}
	if !utf8.Valid(decoded) {
		return ErrNonASCII
	}
	return nil
}

// checkHop checks what follows an allowed %25, which a decoding hop passes
// on as a '%': it must start an escape that the app's decoder reads one
// way (Werkzeug leaves "%zz" as it is, others refuse it), of a byte whose
// class allow lets through, since the hop sends that byte on decoded: a
// %250D%250A is a CR LF to the app.
func checkHop(rest string, allow Classes) error {
	if len(rest) < 2 || !isHex(rest[0]) || !isHex(rest[1]) {
		return ErrEncodedPercent
	}
	d := unhex(rest[0])<<4 | unhex(rest[1])
	switch cl := escapeClass(d); {
	case d == 0:
		return ErrNUL
	case cl == EncodedPercent: // a second hop's
		return ErrEncodedPercent
	case cl != 0 && !allow.Has(cl):
		return classErr(cl)
	}
	return nil
}

// ValidHost reports whether host, as the request sends it, is one host
// name (with an optional trailing dot), IPv4 address or bracketed IPv6
// address, with an optional port of one to five digits; letters in either
// case. The empty host, of an HTTP/1.0 request without
// one, is valid: it matches no route that names a host.
func ValidHost(host string) bool {
	if host == "" {
		return true
	}
	name, port := host, ""
	if host[0] == '[' {
		end := strings.IndexByte(host, ']')
		if end < 0 || !validIPv6(host[1:end]) {
			return false
		}
		name, port = "", host[end+1:]
	} else if i := strings.IndexByte(host, ':'); i >= 0 {
		name, port = host[:i], host[i:]
	}
	for i := 0; i < len(name); i++ {
		if !hostChars[name[i]] {
			return false
		}
	}
	if port == "" {
		return name != "" || host[0] == '['
	}
	if port == ":" { // an empty port is the default (RFC 3986 §3.2.3)
		return name != "" || host[0] == '['
	}
	if port[0] != ':' || len(port) > 6 {
		return false
	}
	n := 0
	for i := 1; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
		n = n*10 + int(port[i]-'0')
	}
	return n <= 65535 && host[0] != ':'
}

// hostChars are the bytes of a host name: letters, digits, '-', '.' and
// '_' (which internal names use).
var hostChars = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['-'], t['.'], t['_'] = true, true, true
	return t
}()

// validIPv6 reports an IPv6 address without a zone, as a bracketed host
// holds it.
func validIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && a.Zone() == ""
}
