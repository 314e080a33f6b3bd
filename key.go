package admit

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key says whom a group's buckets belong to. The zero Key keys each request
// by its client, as Config.Key finds it: the TCP peer, or the client a
// trusted proxy names.
//
// A header or a path value is chosen freely by whoever sends the request, so
// a limit keyed by one alone gives a forger a fresh budget per value; a
// route whose every limit is keyed that way is refused unless a group says
// an earlier layer authenticates the value (Authenticated).
type Key struct {
	// Header keys by the value of this request header: for an API token or
	// a tenant name. The value is hashed (quota.Subject's SHA-256) before any
	// table, store, log line or metric sees it. Surrounding white space,
	// as Python and JavaScript trim it, is ignored, so spellings an app
	// reads alike share a budget. A request that
	// sends the header more than once is refused with 400: an app might
	// read either line. Authorization is keyed by its credential whatever
	// the scheme, a Basic one by the user:pass it decodes to, and a Basic
	// credential that is not canonical base64 is refused with 400 (see
	// headerKey).
	Header string
	// PathValue keys by the value of the wildcard of this name in the
	// matched route pattern (Request.PathValue), hashed like a header.
	PathValue string
	// Global puts every request of the group under one key.
	Global bool
	// Func keys by the string it returns for a request: a user or tenant
	// id an earlier middleware put in the request's context, as
	// go-chi/httprate's WithKeyFuncs. The string is hashed like a header
	// before any table, store, log line or metric sees it, and counts in
	// the group's bounded table like any other key. An empty string is a
	// missing value (see RejectMissing). It runs on the request's
	// goroutine for every request of the group, so it must be quick, and
	// safe for concurrent use. It is the app's own code, so a route may be
	// limited by it alone; Door.Decide, which has no request, finds no
	// value. A config file cannot name a function: this key is the
	// library's only.
	Func func(*http.Request) string
	// IPv4Prefix and IPv6Prefix widen a client key to a prefix of this many
	// bits, so one budget covers a /24 or a /48. 0: the client key as it is
	// (by default /32 and /64). A key is never narrowed below what
	// Config.Key returns.
	IPv4Prefix, IPv6Prefix int
	// RejectMissing refuses a request without the header (or with an empty
	// path value, or an empty result of Func): 401 when the header is
	// Authorization, 400 otherwise.
	// false: such a request is keyed by its client instead. A CORS
	// preflight is keyed by its client either way: a browser sends it
	// without credentials, and refusing it fails the request it precedes.
	RejectMissing bool
	// Authenticated says that an earlier layer authenticates the header or
	// path value, so a client cannot choose it freely.
	Authenticated bool
}

// kind returns how k keys a request.
func (k Key) kind() keyKind {
	switch {
	case k.Header != "":
		return keyHeader
	case k.PathValue != "":
		return keyPath
	case k.Global:
		return keyGlobal
	case k.Func != nil:
		return keyFunc
	}
	return keyClient
}

type keyKind uint8

const (
	keyClient keyKind = iota
	keyHeader
	keyPath
	keyGlobal
	keyFunc
)

// chosen reports a key the client chooses freely.
func (k Key) chosen() bool {
	kind := k.kind()
	return (kind == keyHeader || kind == keyPath) && !k.Authenticated
}

// validate names the first bad field of k.
func (k Key) validate(g Group) error {
	set := 0
	for _, b := range []bool{k.Header != "", k.PathValue != "", k.Global, k.Func != nil} {
		if b {
			set++
		}
	}
	switch {
	case set > 1:
		return fieldsError(g, "set one of {Key.Header}, {Key.PathValue}, {Key.Global} and {Key.Func}")
	case k.IPv4Prefix < 0 || k.IPv4Prefix > 32:
		return fieldsError(g, "{Key.IPv4Prefix} %d, want 1 to 32 (0: the client's address)", k.IPv4Prefix)
	case k.IPv6Prefix < 0 || k.IPv6Prefix > 128:
		return fieldsError(g, "{Key.IPv6Prefix} %d, want 1 to 128 (0: the client's address)", k.IPv6Prefix)
	case (k.IPv4Prefix != 0 || k.IPv6Prefix != 0) && set > 0:
		return fieldsError(g, "{Key.IPv4Prefix} and {Key.IPv6Prefix} widen a key by the client's address ({ClientKey}), and this key is another")
	case (k.RejectMissing && k.Func == nil || k.Authenticated) && k.Header == "" && k.PathValue == "":
		return fieldsError(g, "{Key.RejectMissing} and {Key.Authenticated} apply to a key by {Key.Header} or {Key.PathValue}")
	case k.Header != "" && strings.ContainsAny(k.Header, " \t:"):
		return fieldsError(g, "{Key.Header} %q is not a header name", k.Header)
	}
	return nil
}

// errMissingKey and errAmbiguousKey refuse a request a group cannot key.
var (
	errMissingKey   = errors.New("the request lacks the value its limit is keyed by")
	errAmbiguousKey = errors.New("the request sends the header its limit is keyed by more than once")
	errMalformedKey = errors.New("the Basic credential its limit is keyed by is not canonical base64")
)

// clientKey is a request's client key, found once however many limits of
// its route key by the client.
type clientKey struct {
	key   netip.Prefix
	found bool
}

// of returns the client key of r, finding it on the first call; a request
// that is not HTTP comes with its client key found.
func (c *clientKey) of(set *settings, r *http.Request) netip.Prefix {
	if !c.found {
		c.key, c.found = set.key(r), true
	}
	return c.key
}

// keyOf returns the key of a request under group g's Key: the client key
// (widened), or a hash of the header, path value or Func's result, or the
// one global key.
// A missing value falls back to the client key unless the group rejects
// it. header is the request's; r is nil for a request that is not HTTP,
// which has no path values.
func (g *group) keyOf(r *http.Request, header http.Header, client *clientKey) (netip.Prefix, error) {
	k := &g.budget.Key
	switch g.keyKind {
	case keyGlobal:
		return globalKey, nil
	case keyHeader:
		vs := header.Values(k.Header)
		switch {
		case len(vs) > 1:
			return netip.Prefix{}, errAmbiguousKey
		case len(vs) == 1:
			key, ok, err := headerKey(g.authorization, vs[0])
			if err != nil {
				return netip.Prefix{}, err
			}
			if ok {
				return key, nil
			}
		}
	case keyPath:
		if r == nil {
			break
		}
		if v := r.PathValue(k.PathValue); v != "" {
			return hashKey(v), nil
		}
	case keyFunc:
		if r == nil {
			break
		}
		if v := k.Func(r); v != "" {
			return hashKey(v), nil
		}
	}
	if g.keyKind != keyClient && k.RejectMissing && !preflight(r, header) {
		return netip.Prefix{}, errMissingKey
	}
	return g.widen(client.of(g.set, r)), nil
}

// preflight reports a CORS preflight (Fetch: an OPTIONS with Origin and
// Access-Control-Request-Method), which a browser sends without the
// credentials a group may key by.
func preflight(r *http.Request, header http.Header) bool {
	return r != nil && r.Method == http.MethodOptions && header.Get("Origin") != "" && header.Get("Access-Control-Request-Method") != ""
}

// KeyOf returns the key request r is counted under in group g, as text: the
// client prefix ("192.0.2.0/24"), the hex of a hashed header or path value
// (what a shared store sees as the subject), or "global". The error says why
// r cannot be keyed: the door refuses such a request.
func (d *Door) KeyOf(g Group, r *http.Request) (string, error) {
	grp, ok := d.groups[g]
	if !ok {
		return "", fmt.Errorf("admit: unknown group %q", g)
	}
	k, err := grp.keyOf(r, r.Header, &clientKey{})
	if err != nil {
		return "", err
	}
	return keyText(k), nil
}

// keyText writes a table key for people.
func keyText(k netip.Prefix) string {
	switch {
	case k == globalKey:
		return "global"
	case k.Bits() == 0: // a hash
		b := k.Addr().As16()
		return hex.EncodeToString(b[:])
	}
	return k.String()
}

// widen masks a client key to the group's prefix widths.
func (g *group) widen(p netip.Prefix) netip.Prefix {
	bits := g.budget.Key.IPv6Prefix
	if p.Addr().Is4() {
		bits = g.budget.Key.IPv4Prefix
	}
	if bits == 0 || bits >= p.Bits() {
		return p
	}
	w, _ := p.Addr().Prefix(bits)
	return w
}

// globalKey is the one key of a Global group.
var globalKey = netip.PrefixFrom(netip.IPv6Unspecified(), 128)

// hashKey returns a table key for a value the client sends: the first 16
// bytes of its SHA-256, the same bytes quota.Subject writes in hex, held as
// an IPv6 address so that every key of the door is one comparable type. Its
// prefix length is 0, which no client key has (they are masked to at least
// one bit), so a hash never equals the client key a request without the
// value falls back to.
func hashKey(v string) netip.Prefix {
	var buf [256]byte // short values hash without allocating
	if len(v) <= len(buf) {
		return hashBytes(buf[:copy(buf[:], v)])
	}
	return hashBytes([]byte(v))
}

func hashBytes(b []byte) netip.Prefix {
	sum := sha256.Sum256(b)
	return netip.PrefixFrom(netip.AddrFrom16([16]byte(sum[:16])), 0)
}

// headerKey returns the key of a header value as apps read it, so that
// every spelling an app reads as one value is one key:
//
//   - Surrounding white space goes, as Python's strip() and JavaScript's
//     trim() remove it from a header decoded as Latin-1 (Node) or UTF-8
//     (Werkzeug): ASCII white space, the separators 0x1C to 0x1F, NEL and
//     NBSP as one byte or as UTF-8, and the other Unicode spaces.
//   - For Authorization (authorization), the key is the credential after
//     the scheme, whatever the scheme: "Bearer t", "Token t" and "JWT t"
//     name one token. A Basic credential is keyed by the user:pass it
//     decodes to, and must be canonical base64 (decoders that skip bytes
//     outside the alphabet, or forgive missing padding, would otherwise
//     read many spellings as one credential), without white space inside,
//     which decoders skip. Another credential holding white space is keyed
//     by its first word: apps that split at every space read only that
//     ("Digest username=...," keys by the user, "Bearer a b" as "a").
//
// It builds no string for a credential that needs no decoding, so that
// hashing a token allocates nothing. false: the value is empty. The error
// is errMalformedKey.
func headerKey(authorization bool, v string) (netip.Prefix, bool, error) {
	v = trimAppSpace(v)
	if v == "" {
		return netip.Prefix{}, false, nil
	}
	if !authorization {
		return hashKey(v), true, nil
	}
	i := indexAppSpace(v)
	if i < 0 {
		return hashKey(v), true, nil // no scheme: the app reads it as it is
	}
	scheme, cred := v[:i], trimAppSpace(v[i:])
	j := indexAppSpace(cred)
	if !strings.EqualFold(scheme, "basic") {
		if j >= 0 {
			// Apps that split at every space read only the first word;
			// the others read it all. Both hold it: key by it.
			cred = cred[:j]
		}
		return hashKey(cred), true, nil
	}
	if j >= 0 {
		return netip.Prefix{}, false, errMalformedKey // base64 decoders skip the space
	}
	var buf [192]byte
	n := base64.StdEncoding.DecodedLen(len(cred))
	dst := buf[:0]
	if n > len(buf) {
		dst = make([]byte, 0, n)
	}
	dst = dst[:n]
	n, err := base64.StdEncoding.Strict().Decode(dst, []byte(cred))
	if err != nil || len(cred)%4 != 0 {
		return netip.Prefix{}, false, errMalformedKey
	}
	return hashBytes(dst[:n]), true, nil
}

// appSpaceAt returns the length of the white space that starts v[i:], as
// Python's str.isspace or JavaScript's trim reads it, whether the app
// decodes the header as Latin-1 (a lone 0x85 or 0xA0) or as UTF-8 (U+0085,
// U+00A0, U+2000 and the other Unicode spaces, U+FEFF); 0 if none.
func appSpaceAt(v string, i int) int {
	c := v[i]
	if c < utf8.RuneSelf {
		if c == ' ' || '\t' <= c && c <= '\r' || 0x1c <= c && c <= 0x1f {
			return 1
		}
		return 0
	}
	r, n := utf8.DecodeRuneInString(v[i:])
	if r == utf8.RuneError && n == 1 {
		if c == 0x85 || c == 0xa0 {
			return 1
		}
		return 0
	}
	if unicode.IsSpace(r) || r == '\ufeff' {
		return n
	}
	return 0
}

// appSpaceBefore is appSpaceAt for the white space that ends v[:j].
func appSpaceBefore(v string, j int) int {
	r, n := utf8.DecodeLastRuneInString(v[:j])
	if r == utf8.RuneError && n == 1 {
		return appSpaceAt(v, j-1)
	}
	return appSpaceAt(v, j-n)
}

// trimAppSpace removes white space, as appSpaceAt reads it, from both ends
// of v.
func trimAppSpace(v string) string {
	i, j := 0, len(v)
	for i < j {
		n := appSpaceAt(v, i)
		if n == 0 {
			break
		}
		i += n
	}
	for j > i {
		n := appSpaceBefore(v[:j], j)
		if n == 0 {
			break
		}
		j -= n
	}
	return v[i:j]
}

// indexAppSpace returns the index of the first white space in v, as
// appSpaceAt reads it, or -1.
func indexAppSpace(v string) int {
	for i := 0; i < len(v); i++ {
		if appSpaceAt(v, i) > 0 {
			return i
		}
	}
	return -1
}
