package clientip

import "strings"

// This file holds the RFC 7239 Forwarded syntax:
//
//	Forwarded         = 1#forwarded-element
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
//
// Elements are separated by commas outside quoted strings, so the walk
// splits a line left to right once and then examines the elements right to
// left.

// span is an element's position in its header line: line[start:end].
type span struct{ start, end int }

// splitElements appends the spans of the comma-separated elements of line to
// dst, honouring quoted strings and their backslash escapes. A quoted string
// that never closes runs to the end of the line, so its element is the
// right-most one and forValue refuses it.
func splitElements(line string, dst []span) []span {
	start, i := 0, 0
	for {
		j := strings.IndexAny(line[i:], ",\"")
		if j < 0 {
			break
		}
		i += j
		if line[i] == ',' {
			dst = append(dst, span{start, i})
			start = i + 1
			i++
			continue
		}
		// A quoted string: skip to its closing quote, or to the end.
		for i++; i < len(line) && line[i] != '"'; i++ {
			if line[i] == '\\' {
				i++
			}
		}
		if i >= len(line) {
			break
		}
		i++
	}
	return append(dst, span{start, len(line)})
}

// forValue returns the for= value of one element, unquoted. It refuses an
// element that does not follow the grammar, that has no for= or more than
// one, or whose for= value is empty or holds a quoted-pair (no address needs
// escaping, and unescaping would allocate). Parameter names are
// case-insensitive; spaces and tabs around pairs are tolerated.
func forValue(elem string) (string, bool) {
	var val string
	found := false
	for rest := elem; ; {
		rest = trimOWS(rest)
		if rest == "" {
			break
		}
		if rest[0] == ';' {
			rest = rest[1:]
			continue
		}
		n := tokenLen(rest)
		if n == 0 || n == len(rest) || rest[n] != '=' {
			return "", false
		}
		name := rest[:n]
		rest = rest[n+1:]
		var v string
		escaped := false
		if rest != "" && rest[0] == '"' {
			end := 1
			for ; end < len(rest) && rest[end] != '"'; end++ {
				switch c := rest[end]; {
				case c == '\\':
					escaped = true
					end++
				case c < ' ' && c != '\t' || c == 0x7f:
					return "", false
				}
			}
			if end >= len(rest) {
				return "", false // the quoted string never closes
			}
			v, rest = rest[1:end], rest[end+1:]
		} else {
			m := tokenLen(rest)
			if m == 0 {
				return "", false
			}
			v, rest = rest[:m], rest[m:]
		}
		rest = trimOWS(rest)
		if rest != "" && rest[0] != ';' {
			return "", false
		}
		if strings.EqualFold(name, "for") {
			if found || escaped || v == "" {
				return "", false
			}
			found, val = true, v
		}
	}
	return val, found
}

// tokenLen returns the length of the RFC 9110 token at the start of s.
func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return i
		}
	}
	return len(s)
}

func isTchar(c byte) bool { return tchars[c] }

// tchars marks the bytes RFC 9110 allows in a token.
var tchars = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isAlnum(byte(c)) || strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()
