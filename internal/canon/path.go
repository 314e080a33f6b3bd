package canon

import "strings"

// Path returns the canonical form of raw, the escaped path of a request
// target without its query: unreserved characters decoded, other escapes in
// upper case, characters a path may not hold escaped, dot segments removed,
// slashes merged, and encoded slashes and backslashes handled as slashes
// says. raw must start with '/'. It returns raw itself, without allocating,
// when raw is canonical.
func Path(raw string, slashes Slashes) (string, error) {
	if !strings.HasPrefix(raw, "/") {
		return "", ErrTarget
	}
	if canonical(raw, slashes) {
		return raw, nil
	}
	segs, err := segments(raw, slashes)
	if err != nil {
		return "", err
	}
	var out []string
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "", ".":
			// An empty segment is a doubled slash; a dot names the
			// directory it is in. Either, last, leaves a trailing slash.
			trailing = trailing || last
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = trailing || last
		default:
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return "/", nil
	}
	p := "/" + strings.Join(out, "/")
	if trailing {
		p += "/"
	}
	return p, nil
}

// canonical reports, in one scan, that raw needs no change: it holds only
// path characters and canonical escapes, no doubled slash and no dot
// segment.
func canonical(raw string, slashes Slashes) bool {
	for i := 0; i < len(raw); i++ {
		switch scan[raw[i]] {
		case scanPlain, scanSemi:
		case scanSlash:
			if i+1 < len(raw) && (raw[i+1] == '/' || raw[i+1] == '.' && dotSegment(raw[i+1:])) {
				return false
			}
		case scanEscape:
			if !canonicalEscape(raw[i:], slashes) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

// canonicalEscape reports whether s starts with an escape that Path keeps as
// it is: two upper-case hex digits of a byte that is neither unreserved nor
// NUL, and a slash or backslash only under Keep.
func canonicalEscape(s string, slashes Slashes) bool {
	if len(s) < 3 || !upper(s[1]) || !upper(s[2]) {
		return false
	}
	d := unhex(s[1])<<4 | unhex(s[2])
	if d == '/' || d == '\\' {
		return slashes == Keep
	}
	return d != 0 && !unreserved(d)
}

// upper reports an upper-case hex digit.
func upper(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

// Classes of bytes for the canonical scans.
const (
	scanOther  = iota // needs the slow path
	scanPlain         // a path character
	scanSemi          // ';', a path character that servlet containers read as a parameter
	scanSlash         // '/'
	scanQuery         // '?', which ends the path of a target
	scanEscape        // '%'
)

var scan = func() (t [256]uint8) {
	for c := range 256 {
		if pathChars[c] {
			t[c] = scanPlain
		}
	}
	t['/'], t['?'], t['%'], t[';'] = scanSlash, scanQuery, scanEscape, scanSemi
	return t
}()

// dotSegment reports whether rest, the path after a slash, starts with a
// "." or ".." segment.
func dotSegment(rest string) bool {
	if !strings.HasPrefix(rest, ".") {
		return false
	}
	rest = strings.TrimPrefix(rest[1:], ".")
	return rest == "" || rest[0] == '/'
}

// segments splits raw, after its leading slash, into escaped, normalised
// segments; a separator that Decode makes out of an escape splits too.
func segments(raw string, slashes Slashes) (segs []string, err error) {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return nil, ErrBadEscape
			}
			d := unhex(raw[i+1])<<4 | unhex(raw[i+2])
			i += 2
			switch {
			case d == '/' || d == '\\':
				switch slashes {
				case Reject:
					return nil, ErrEncodedSlash
				case Decode:
					segs = append(segs, b.String())
					b.Reset()
					continue
				}
				writeEscape(&b, d)
			case d == 0:
				return nil, ErrNUL
			case unreserved(d):
				b.WriteByte(d)
			default:
				writeEscape(&b, d)
			}
		case c == '\\':
			switch slashes {
			case Reject:
				return nil, ErrEncodedSlash
			case Decode:
				segs = append(segs, b.String())
				b.Reset()
				continue
			}
			writeEscape(&b, c)
		case c == '/':
			segs = append(segs, b.String())
			b.Reset()
		case c == 0:
			return nil, ErrNUL
		case pathChar(c):
			b.WriteByte(c)
		default:
			writeEscape(&b, c)
		}
	}
	segs = append(segs, b.String())
	return segs, nil
}

const upperHex = "0123456789ABCDEF"

func writeEscape(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&15])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// unreserved reports RFC 3986's unreserved characters: an escape of one
// means the character itself.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// pathChar reports the characters a path segment may hold unescaped (RFC
// 3986 pchar, without '%'): unreserved, sub-delims, ':' and '@'.
func pathChar(c byte) bool { return pathChars[c] }

// pathChars is pathChar as a table: the canonical scan looks each byte up
// once.
var pathChars = func() (t [256]bool) {
	for c := range 256 {
		t[c] = unreserved(byte(c)) || strings.IndexByte("!$&'()*+,;=:@", byte(c)) >= 0
	}
	return t
}()
