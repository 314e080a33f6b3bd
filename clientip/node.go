package clientip

import (
	"net/netip"
	"strings"
)

// maxHopLen bounds one address entry. The longest address with a port,
// "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535", is 53 bytes; the
// rest leaves room for a zone of an interface name's length. Anything longer
// is malformed without being parsed.
const maxHopLen = 72

// parseNode parses one address as it appears in RemoteAddr, an
// X-Forwarded-For entry or a Forwarded for= value: ip, ip:port, [ipv6] or
// [ipv6]:port, where a bare IPv6 address is allowed unless forwarded is set
// (RFC 7239 brackets every IPv6 address), and a Forwarded port may be an
// obfuscated "_name". The result is canonical: IPv4-mapped addresses are
// unmapped and zones stripped, before anyone compares it with a trusted
// prefix. The unspecified addresses and leading-zero octets are refused.
func parseNode(s string, forwarded bool) (netip.Addr, bool) {
	if s == "" || len(s) > maxHopLen {
		return netip.Addr{}, false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 || !validPort(s[end+1:], forwarded) {
			return netip.Addr{}, false
		}
		return parseIP(s[1:end], true)
	}
	colon := strings.IndexByte(s, ':')
	if colon < 0 {
		return parseIP(s, false)
	}
	if strings.IndexByte(s[colon+1:], ':') < 0 {
		// One colon: IPv4 with a port.
		if !validPort(s[colon:], forwarded) {
			return netip.Addr{}, false
		}
		return parseIP(s[:colon], false)
	}
	if forwarded {
		return netip.Addr{}, false
	}
	return parseIP(s, true)
}

// validPort reports whether s is empty or a colon and a port: 1 to 5 digits
// no greater than 65535, or, if obfuscated is set, an RFC 7239 obfport.
func validPort(s string, obfuscated bool) bool {
	if s == "" {
		return true
	}
	if len(s) < 2 || s[0] != ':' {
		return false
	}
	s = s[1:]
	if obfuscated && s[0] == '_' {
		for i := 1; i < len(s); i++ {
			if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
				return false
			}
		}
		return len(s) > 1
	}
	if len(s) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n <= 65535
}

// parseIP parses an IPv6 (v6 set) or IPv4 address and canonicalises it. The
// zone is cut off before parsing, which keeps a zoned address from
// allocating.
func parseIP(s string, v6 bool) (netip.Addr, bool) {
	if i := strings.IndexByte(s, '%'); i >= 0 {
		if !v6 || i == len(s)-1 {
			return netip.Addr{}, false
		}
		s = s[:i]
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Is6() != v6 {
		return netip.Addr{}, false
	}
	a = a.Unmap()
	if a.IsUnspecified() {
		return netip.Addr{}, false
	}
	return a, true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
