package clientip

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FuzzKey drives the whole resolver with a peer, header lines (separated by
// newlines) and a trusted set. The key must always be the masked peer, the
// non-IP key, or the masked canonical form of an address that appears in the
// header; for X-Forwarded-For it must equal a naive reference walk.
func FuzzKey(f *testing.F) {
	seeds := []struct {
		peer, lines, trusted string
		forwarded            bool
		bits                 uint8
	}{
		// Plain peers in every RemoteAddr shape, and non-IP peers.
		{"198.51.100.7:4711", "", "", false, 0},
		{"[2001:db8::1%eth0]:443", "", "", false, 64},
		{"[::ffff:10.0.0.1]:80", "198.51.100.7", "10.0.0.0/8", false, 0},
		{"@", "198.51.100.7", "10.0.0.0/8", false, 0},
		{"", "", "", false, 0},
		// A chain over several lines, the client in an earlier line.
		{"10.0.0.1:80", "1.1.1.1, 198.51.100.7\n10.0.0.3\n10.0.0.2", "10.0.0.0/8", false, 0},
		// Separators: tabs, no spaces, trailing and repeated commas.
		{"10.0.0.1:80", "1.1.1.1,198.51.100.7\t,\t10.0.0.2,, ,", "10.0.0.0/8", false, 0},
		// Malformed entries between and at the right.
		{"10.0.0.1:80", "198.51.100.7, unknown, 10.0.0.2", "10.0.0.0/8", false, 0},
		{"10.0.0.1:80", "198.51.100.7, 0.0.0.0", "10.0.0.0/8", false, 0},
		{"10.0.0.1:80", "198.051.100.7", "10.0.0.0/8", false, 0},
		// Mapped and zoned hops that must be recognised as trusted.
		{"10.0.0.1:80", "198.51.100.7, ::ffff:10.0.0.2, [fd00::2%eth0]:9", "10.0.0.0/8 fd00::/8", false, 0},
		// All trusted.
		{"10.0.0.1:80", "10.0.0.5, 10.0.0.4", "10.0.0.0/8", false, 0},
		// Forwarded: quotes, ports, obfuscation, sabotage.
		{"10.0.0.1:80", `for=1.1.1.1, For="[2001:db8::1]:4711";proto=https, for=10.0.0.2`, "10.0.0.0/8", true, 48},
		{"10.0.0.1:80", `for=198.51.100.7, for="10.0.0.2`, "10.0.0.0/8", true, 0},
		{"10.0.0.1:80", `for=198.51.100.7;for=1.1.1.1`, "10.0.0.0/8", true, 0},
		{"10.0.0.1:80", `for=_hidden, for=unknown, for=[::1]`, "10.0.0.0/8", true, 0},
		{"10.0.0.1:80", `for=198.51.100.7;ext="a,\"b", for="10.0.0.2:_x"`, "10.0.0.0/8", true, 0},
	}
	for _, s := range seeds {
		f.Add(s.peer, s.lines, s.trusted, s.forwarded, s.bits)
	}
	f.Fuzz(func(t *testing.T, peer, lines, trustedRaw string, forwarded bool, bits uint8) {
		list, err := ParseTrustedProxies(trustedRaw)
		if err != nil {
			list = nil
		}
		cfg := Config{TrustedProxies: list, Forwarded: forwarded}
		if bits != 0 {
			cfg.IPv6Bits = 32 + int(bits)%97
		}
		r, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
		header := "X-Forwarded-For"
		if forwarded {
			header = "Forwarded"
		}
		req := &http.Request{RemoteAddr: peer, Header: http.Header{header: strings.Split(lines, "\n")}}

		key := r.Key(req)
		if e := r.Explain(req); e.Key != key {
			t.Fatalf("Explain().Key = %v, Key = %v", e.Key, key)
		}
		if addr := r.Addr(req); r.mask(addr) != key {
			t.Fatalf("mask(Addr) = %v, Key = %v", r.mask(addr), key)
		}

		peerAddr, ok := parseNode(peer, false)
		if !ok {
			if key != NonIPKey() {
				t.Fatalf("non-IP peer %q: key %v, want %v", peer, key, NonIPKey())
			}
			return
		}
		candidates := []netip.Prefix{r.mask(peerAddr)}
		for _, a := range headerAddrs(req.Header[header], forwarded) {
			candidates = append(candidates, r.mask(a))
		}
		if !slices.Contains(candidates, key) {
			t.Fatalf("key %v is neither the peer nor in the header; candidates %v", key, candidates)
		}
		if !forwarded {
			if want := r.mask(referenceXFF(r, peerAddr, req.Header[header])); key != want {
				t.Fatalf("key %v, reference walk %v", key, want)
			}
		}
	})
}

// headerAddrs returns every address that parses anywhere in the header lines.
func headerAddrs(lines []string, forwarded bool) []netip.Addr {
	var out []netip.Addr
	for _, line := range lines {
		if !forwarded {
			for _, entry := range strings.Split(line, ",") {
				if a, ok := parseNode(strings.Trim(entry, " \t"), false); ok {
					out = append(out, a)
				}
			}
			continue
		}
		for _, s := range splitElements(line, nil) {
			if v, ok := forValue(line[s.start:s.end]); ok {
				if a, ok := parseNode(v, true); ok {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// referenceXFF is the walk written the obvious way: join, split, reverse.
func referenceXFF(r *Resolver, peer netip.Addr, lines []string) netip.Addr {
	if !r.trusts(peer) {
		return peer
	}
	var entries []string
	for _, e := range strings.Split(strings.Join(lines, ","), ",") {
		if e = strings.Trim(e, " \t"); e != "" {
			entries = append(entries, e)
		}
	}
	last := peer
	for i := len(entries) - 1; i >= 0; i-- {
		a, ok := parseNode(entries[i], false)
		if !ok {
			return last
		}
		if !r.trusts(a) {
			return a
		}
		last = a
	}
	return last
}

// FuzzForwarded checks the RFC 7239 element splitter and parser: element
// spans stay inside the line and in order, a for value is a piece of its
// element, and an address it yields is canonical and survives a round trip.
func FuzzForwarded(f *testing.F) {
	for _, s := range []string{
		"for=198.51.100.7",
		`for="198.51.100.7:4711"`,
		`For="[2001:db8::1]:4711";proto=https;by=10.0.0.1`,
		`for="[fe80::1%eth0]:_port"`,
		`for="[::ffff:10.0.0.2]"`,
		"for=unknown, for=_hidden",
		`for=198.51.100.7;ext="a, for=1.1.1.1", for=10.0.0.2`, // comma inside quotes
		`for="10.0.0.2`,                                       // quote never closes
		`for=1.1.1.1;for=2.2.2.2`,                             // duplicated for
		`for=[2001:db8::1]`,                                   // unquoted IPv6
		`for="198.51.100.\7"`,                                 // quoted-pair in the address
		`for="` + "\x01" + `1.1.1.1"`,                         // control character
		",, ;for=198.51.100.7;; , ,",                          // empty elements and pairs
		"for=0.0.0.0, for=\"[::]\"",                           // unspecified
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		prev := 0
		for _, s := range splitElements(line, nil) {
			if s.start < prev || s.end < s.start || s.end > len(line) {
				t.Fatalf("span %+v out of order or range (prev end %d, len %d)", s, prev, len(line))
			}
			prev = s.end
			elem := line[s.start:s.end]
			v, ok := forValue(elem)
			if !ok {
				continue
			}
			if !strings.Contains(elem, v) {
				t.Fatalf("for value %q not in element %q", v, elem)
			}
			a, ok := parseNode(v, true)
			if !ok {
				continue
			}
			if a.Is4In6() || a.Zone() != "" || a.IsUnspecified() {
				t.Fatalf("%q gave non-canonical %v", v, a)
			}
			text := a.String()
			if a.Is6() {
				text = "[" + text + "]"
			}
			v2, ok := forValue(`for="` + text + `"`)
			if !ok {
				t.Fatalf("round trip of %v: element refused", a)
			}
			if a2, ok := parseNode(v2, true); !ok || a2 != a {
				t.Fatalf("round trip of %v gave %v, %v", a, a2, ok)
			}
		}
	})
}
