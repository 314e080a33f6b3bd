package canon

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Slashes is the policy for encoded slashes and backslashes in a path: %2F,
// %5C (in either case) and a raw '\'.
type Slashes uint8

const (
	// Reject refuses the request. It is the zero value: routers disagree on
	// whether %2F separates segments, so neither reading is safe to guess.
	Reject Slashes = iota
	// Decode turns each into '/', as WHATWG URLs do with '\' in http URLs,
	// before dot segments are removed and slashes merged; the upstream
	// receives the decoded path.
	Decode
	// Keep leaves %2F and %5C encoded, as data inside one segment, and
	// escapes a raw '\' as %5C. Only for upstreams that never decode them
	// before routing.
	Keep
)

// String returns the policy as the server's flag spells it.
func (s Slashes) String() string {
	switch s {
	case Reject:
		return "reject"
	case Decode:
		return "decode"
	case Keep:
		return "keep"
	}
	return "unknown"
}

// ParseSlashes reads a policy as String spells it.
func ParseSlashes(v string) (Slashes, error) {
	for _, s := range []Slashes{Reject, Decode, Keep} {
		if v == s.String() {
			return s, nil
		}
	}
	return 0, errors.New("want reject, decode or keep")
}

// Errors for requests that have no canonical form; each becomes a 400.
var (
	ErrEncodedSlash = errors.New("the path holds an encoded slash or backslash (%2F, %5C) or a backslash")
	ErrBadEscape    = errors.New("the path holds a '%' that does not start two hex digits")
	ErrNUL          = errors.New("the path holds a NUL byte, raw or encoded (%00)")
	ErrFragment     = errors.New("the request target holds a '#'")
	ErrTarget       = errors.New("the request target is neither a path nor an absolute URL")
	ErrMethod       = errors.New("the method is not an upper-case token")
	ErrConnect      = errors.New("CONNECT is not served: admit is a reverse proxy")
)

// Options are how Request reads a request. The zero Options refuse
// encoded slashes and every Class.
type Options struct {
	Slashes Slashes // encoded slashes and backslashes
	Allow   Classes // the classes let through rather than refused
}

// Request puts r into its canonical form: see the package documentation.
// When r is canonical already it returns r itself and allocates nothing;
// otherwise it returns a shallow copy with its own URL, leaving r as it
// was. The error, one of the package's, says why r has no canonical form
// or holds a class o does not allow.
func Request(r *http.Request, o Options) (*http.Request, error) {
	if err := Method(r.Method); err != nil {
		return nil, err
	}
	if canonicalTarget(r.RequestURI, o) && r.URL.Host == "" && canonicalValidHost(r.Host, r.TLS != nil, o) {
		return r, nil
	}
	raw, query, err := target(r)
	if err != nil {
		return nil, err
	}
	if err := checkPath(raw, o.Allow); err != nil {
		return nil, err
	}
	path, err := Path(raw, o.Slashes)
	if err != nil {
		return nil, err
	}
	if !o.Allow.Has(BadHost) && !ValidHost(r.Host) {
		return nil, ErrHost
	}
	host := Host(r.Host, r.TLS != nil)
	if path == raw && host == r.Host && r.URL.Host == "" {
		return r, nil
	}
	c := new(http.Request)
	*c = *r
	c.URL = new(url.URL)
	*c.URL = *r.URL
	c.URL.Scheme, c.URL.Host, c.URL.Opaque = "", "", ""
	// path holds only valid escapes, so unescaping cannot fail.
	c.URL.Path, _ = url.PathUnescape(path)
	c.URL.RawPath = path
	c.RequestURI = path + query
	c.Host = host
	return c, nil
}

// canonicalTarget reports, in one scan, that t is an origin-form target
// whose path is canonical, holds no class o refuses and no escaped byte
// above 0x7F (whose UTF-8 the slow path checks), and whose query holds no
// '#'.
func canonicalTarget(t string, o Options) bool {
	if t == "" || t[0] != '/' {
		return false
	}
	for i := 0; i < len(t); i++ {
		switch scan[t[i]] {
		case scanPlain:
		case scanSemi:
			if !o.Allow.Has(PathParameter) {
				return false
			}
		case scanSlash:
			if i+1 < len(t) && (t[i+1] == '/' || t[i+1] == '.' && dotSegment(t[i+1:])) {
				return false
			}
		case scanQuery:
			return strings.IndexByte(t[i:], '#') < 0
		case scanEscape:
			if !canonicalEscape(t[i:], o.Slashes) {
				return false
			}
			// An allowed %25 still takes the slow path, which checks the
			// escape a decoding hop makes of it.
			if c := escapeClass(unhex(t[i+1])<<4 | unhex(t[i+2])); c != 0 && (c == EncodedPercent || !o.Allow.Has(c)) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

// target returns the raw path of r's request target and its query with the
// leading '?' (empty when there is none).
func target(r *http.Request) (path, query string, err error) {
	t := r.RequestURI
	if t == "" { // a request built in-process rather than read off the wire
		t = r.URL.RequestURI()
	}
	if strings.IndexByte(t, '#') >= 0 {
		return "", "", ErrFragment
	}
	if !strings.HasPrefix(t, "/") {
		// Absolute-form: scheme "://" authority path-abempty.
		i := strings.Index(t, "://")
		if i <= 0 || r.URL.Host == "" {
			return "", "", ErrTarget
		}
		t = t[i+3:]
		if j := strings.IndexAny(t, "/?"); j < 0 {
			t = "/"
		} else if t[j] == '?' {
			t = "/" + t[j:]
		} else {
			t = t[j:]
		}
	}
	if i := strings.IndexByte(t, '?'); i >= 0 {
		return t[:i], t[i:], nil
	}
	return t, "", nil
}

// IsToken reports whether s is a token of RFC 9110, the spelling of a
// method and of a header's name.
func IsToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Method reports whether m may be served: an upper-case token other than
// CONNECT. net/http has checked that it is a token.
func Method(m string) error {
	for i := 0; i < len(m); i++ {
		if c := m[i]; c >= 'a' && c <= 'z' {
			return ErrMethod
		}
	}
	switch m {
	case "":
		return ErrMethod
	case http.MethodConnect:
		return ErrConnect
	}
	return nil
}

// Host returns host lower-cased, without a trailing dot on its name and
// without the default port of its scheme (443 with TLS, 80 without). It
// returns host itself, without allocating, when that is the canonical form.
func Host(host string, tls bool) string {
	colon := -1
	for i := 0; i < len(host); i++ {
		if c := host[i]; hostSpecial[c] {
			switch {
			case c == ':':
				colon = i
			case c == ']':
				colon = -1
			default: // upper case
				return canonicalHost(host, tls)
			}
		}
	}
	name, port := host, ""
	if colon >= 0 {
		name, port = host[:colon], host[colon:]
	}
	if strings.HasSuffix(name, ".") || port == ":" || (tls && port == ":443") || (!tls && port == ":80") {
		return canonicalHost(host, tls)
	}
	return host
}

// canonicalValidHost reports that host is its own canonical form and, unless
// o allows BadHost, valid. A name of lower-case letters, digits, '-', '.'
// and '_' without a trailing dot, the usual Host, is both in one scan.
func canonicalValidHost(host string, tls bool, o Options) bool {
	plain := host != "" && host[len(host)-1] != '.'
	for i := 0; plain && i < len(host); i++ {
		plain = plainHost[host[i]]
	}
	if plain {
		return true
	}
	return Host(host, tls) == host && (o.Allow.Has(BadHost) || ValidHost(host))
}

// plainHost marks the bytes of a host name already canonical and valid.
var plainHost = func() (t [256]bool) {
	for c := range 256 {
		t[c] = hostChars[c] && (c < 'A' || c > 'Z')
	}
	return t
}()

// hostSpecial marks the bytes Host's scan stops at: upper-case letters, ':'
// and ']'.
var hostSpecial = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	t[':'], t[']'] = true, true
	return t
}()

// canonicalHost is Host's slow path, for a host that needs a change.
func canonicalHost(host string, tls bool) string {
	name, port := host, ""
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i:], ']') < 0 {
		name, port = host[:i], host[i:]
	}
	if port == ":" || (tls && port == ":443") || (!tls && port == ":80") {
		port = ""
	}
	return strings.ToLower(strings.TrimSuffix(name, ".")) + port
}
