package clientip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrTrustAll is wrapped by the error for a /0 trusted prefix: trusting
// every address would let any client choose its own key.
var ErrTrustAll = errors.New("trusts every client; list your proxies")

// ParseTrustedProxies parses a list of trusted proxies separated by commas
// or white space, such as "10.0.0.0/8, ::1/128, 192.0.2.7", for
// [Config.TrustedProxies]. A bare address means /32 or /128. Prefixes are
// masked ("10.1.2.3/8" is 10.0.0.0/8) and IPv4-mapped ones read as IPv4.
// Zones and /0 are refused; each error names the offending entry. An empty
// list is not an error: it trusts nobody.
func ParseTrustedProxies(raw string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, entry := range strings.FieldsFunc(raw, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}) {
		p, err := parseTrusted(entry)
		if err != nil {
			return nil, fmt.Errorf("clientip: parse %q: %w", entry, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseTrusted reads one entry of the list. Its errors are its own words:
// netip's name the function and repeat the entry, which the caller names.
func parseTrusted(entry string) (netip.Prefix, error) {
	addr, _, isPrefix := strings.Cut(entry, "/")
	a, err := netip.ParseAddr(addr)
	switch {
	case err != nil && isPrefix:
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address", addr)
	case err != nil:
		return netip.Prefix{}, errors.New("not an IP address or CIDR prefix")
	case a.Zone() != "":
		return netip.Prefix{}, errors.New("zones are not allowed")
	case !isPrefix:
		return canonicalPrefixErr(netip.PrefixFrom(a, a.BitLen()))
	}
	p, err := netip.ParsePrefix(entry)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("want a prefix length from 1 to %d after the slash", a.BitLen())
	}
	return canonicalPrefixErr(p)
}

// canonicalPrefix masks p and turns an IPv4-mapped prefix into IPv4, so it
// matches the canonical addresses the walk compares. It refuses /0.
func canonicalPrefix(p netip.Prefix) (netip.Prefix, error) {
	c, err := canonicalPrefixErr(p)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("clientip: trusted proxy %v: %w", p, err)
	}
	return c, nil
}

// canonicalPrefixErr is canonicalPrefix with an error that names no input.
func canonicalPrefixErr(p netip.Prefix) (netip.Prefix, error) {
	p = unmapPrefix(p)
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("%v %w", p, ErrTrustAll)
	}
	return p, nil
}

// unmapPrefix masks p and turns an IPv4-mapped prefix into IPv4.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}
