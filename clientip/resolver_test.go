package clientip

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// proxies is the trusted set most cases use: a private IPv4 range, a ULA
// IPv6 range and one public reverse proxy.
const proxies = "10.0.0.0/8, fd00:1::/64, 192.0.2.1"

// request builds a request from peer with the given header lines.
func request(peer, header string, lines ...string) *http.Request {
	req := &http.Request{RemoteAddr: peer, Header: http.Header{}}
	for _, l := range lines {
		req.Header.Add(header, l)
	}
	return req
}

func resolver(t testing.TB, cfg Config) *Resolver {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func trusted(t testing.TB, raw string) []netip.Prefix {
	t.Helper()
	p, err := ParseTrustedProxies(raw)
	if err != nil {
		t.Fatalf("ParseTrustedProxies(%q): %v", raw, err)
	}
	return p
}

func TestKey(t *testing.T) {
	const (
		xff = "X-Forwarded-For"
		fwd = "Forwarded"
	)
	long := strings.Repeat("1", maxHopLen+1)
	tests := []struct {
		name      string
		trusted   string // for ParseTrustedProxies
		forwarded bool
		bits      int
		peer      string
		header    string
		lines     []string
		want      string // the key
		untrusted int    // requests counted as ignored forwarding
	}{
		// The peer alone.
		{name: "zero config keys the peer", peer: "198.51.100.7:4711", want: "198.51.100.7/32"},
		{name: "zero config ignores XFF from public peer", peer: "198.51.100.7:4711", header: xff, lines: []string{"203.0.113.9"}, want: "198.51.100.7/32"},
		{name: "bare peer address", peer: "198.51.100.7", want: "198.51.100.7/32"},
		{name: "bare IPv6 peer", peer: "2001:db8:1:2::9", want: "2001:db8:1:2::/64"},
		{name: "IPv6 peer masked to /64", peer: "[2001:db8:1:2:3:4:5:6]:443", want: "2001:db8:1:2::/64"},
		{name: "IPv6 peers share their /64", peer: "[2001:db8:1:2:ffff::1]:443", want: "2001:db8:1:2::/64"},
		{name: "IPv6Bits 48", bits: 48, peer: "[2001:db8:1:2::1]:443", want: "2001:db8:1::/48"},
		{name: "IPv6Bits 128", bits: 128, peer: "[2001:db8:1:2::1]:443", want: "2001:db8:1:2::1/128"},
		{name: "IPv4 stays /32 whatever IPv6Bits", bits: 48, peer: "198.51.100.7:1", want: "198.51.100.7/32"},
		{name: "mapped peer is IPv4 /32", peer: "[::ffff:198.51.100.7]:80", want: "198.51.100.7/32"},
		{name: "zoned peer loses its zone", peer: "[fe80::1%eth0]:80", want: "fe80::/64"},
		{name: "unix socket peer", peer: "@", want: "0.0.0.0/32"},
		{name: "empty peer", peer: "", want: "0.0.0.0/32"},
		{name: "unix path peer with XFF", trusted: proxies, peer: "/run/admit.sock", header: xff, lines: []string{"203.0.113.9"}, want: "0.0.0.0/32"},

		// Who may send a header.
		{name: "trusted peer without header", trusted: proxies, peer: "10.0.0.1:80", want: "10.0.0.1/32"},
		{name: "untrusted public peer sends XFF", trusted: proxies, peer: "203.0.113.50:80", header: xff, lines: []string{"198.51.100.7"}, want: "203.0.113.50/32"},
		{name: "untrusted loopback peer sends XFF", trusted: proxies, peer: "127.0.0.1:9000", header: xff, lines: []string{"198.51.100.7"}, want: "127.0.0.1/32", untrusted: 1},
		{name: "untrusted private peer sends Forwarded", trusted: proxies, peer: "192.168.1.4:9000", header: fwd, lines: []string{"for=198.51.100.7"}, want: "192.168.1.4/32", untrusted: 1},
		{name: "untrusted IPv6 loopback sends XFF", peer: "[::1]:9000", header: xff, lines: []string{"198.51.100.7"}, want: "::/64", untrusted: 1},
		{name: "untrusted loopback without header", peer: "127.0.0.1:9000", want: "127.0.0.1/32"},

		// The X-Forwarded-For walk.
		{name: "one client", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7"}, want: "198.51.100.7/32"},
		{name: "three entries", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, 10.0.0.3, 10.0.0.2"}, want: "198.51.100.7/32"},
		{name: "spoofed left-most entry is ignored", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"1.1.1.1, 198.51.100.7"}, want: "198.51.100.7/32"},
		{name: "answer in an earlier line", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"1.1.1.1, 198.51.100.7", "10.0.0.3", "10.0.0.2"}, want: "198.51.100.7/32"},
		{name: "answer in the last line", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"1.1.1.1", "198.51.100.7, 10.0.0.2"}, want: "198.51.100.7/32"},
		{name: "tabs and no-space commas", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"1.1.1.1,198.51.100.7\t,\t10.0.0.2"}, want: "198.51.100.7/32"},
		{name: "trailing and repeated commas", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7,, ,10.0.0.2,,", ","}, want: "198.51.100.7/32"},
		{name: "only commas", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{" , ,"}, want: "10.0.0.1/32"},
		{name: "garbage between client and proxy", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, garbage, 10.0.0.2"}, want: "10.0.0.2/32"},
		{name: "garbage right-most", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, garbage"}, want: "10.0.0.1/32"},
		{name: "unknown right-most", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, unknown"}, want: "10.0.0.1/32"},
		{name: "unspecified IPv4", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, 0.0.0.0"}, want: "10.0.0.1/32"},
		{name: "unspecified IPv6", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, ::"}, want: "10.0.0.1/32"},
		{name: "mapped unspecified", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, ::ffff:0.0.0.0"}, want: "10.0.0.1/32"},
		{name: "leading-zero octet", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, 198.051.100.7"}, want: "10.0.0.1/32"},
		{name: "overlong token", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, " + long}, want: "10.0.0.1/32"},
		{name: "bracketed IPv4", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, [198.51.100.8]"}, want: "10.0.0.1/32"},
		{name: "port out of range", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7:99999"}, want: "10.0.0.1/32"},
		{name: "zone on IPv4", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7%eth0"}, want: "10.0.0.1/32"},
		{name: "quoted entry", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{`"198.51.100.7"`}, want: "10.0.0.1/32"},
		{name: "all-trusted chain keys the left-most", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"10.0.0.5, 10.0.0.4"}, want: "10.0.0.5/32"},
		{name: "mapped proxy entry cannot slip past trust", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, ::ffff:10.0.0.2"}, want: "198.51.100.7/32"},
		{name: "zoned proxy entry cannot slip past trust", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7, fd00:1::2%eth0"}, want: "198.51.100.7/32"},
		{name: "mapped peer is trusted", trusted: proxies, peer: "[::ffff:10.0.0.1]:80", header: xff, lines: []string{"198.51.100.7"}, want: "198.51.100.7/32"},
		{name: "trusted IPv6 peer", trusted: proxies, peer: "[fd00:1::1]:80", header: xff, lines: []string{"198.51.100.7"}, want: "198.51.100.7/32"},
		{name: "bracketed IPv6 with port", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"[2001:db8:a:b::1]:443"}, want: "2001:db8:a:b::/64"},
		{name: "bracketed IPv6 without port", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"[2001:db8:a:b::2]"}, want: "2001:db8:a:b::/64"},
		{name: "IPv4 with port", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7:5555"}, want: "198.51.100.7/32"},
		{name: "mapped client masked /32", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"::ffff:198.51.100.7"}, want: "198.51.100.7/32"},
		{name: "IPv6 clients share their /64", trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"2001:db8:a:b:1:2:3:4"}, want: "2001:db8:a:b::/64"},
		{name: "XFF mode ignores Forwarded", trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7"}, want: "10.0.0.1/32"},

		// RFC 7239 Forwarded.
		{name: "Forwarded token", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7"}, want: "198.51.100.7/32"},
		{name: "Forwarded quoted with port", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for="198.51.100.7:4711"`}, want: "198.51.100.7/32"},
		{name: "Forwarded IPv6 with port", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for="[2001:db8:a:b::1]:4711"`}, want: "2001:db8:a:b::/64"},
		{name: "Forwarded obfuscated port", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for="198.51.100.7:_p1"`}, want: "198.51.100.7/32"},
		{name: "Forwarded case-insensitive names", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"PROTO=https;For=198.51.100.7;BY=10.0.0.1"}, want: "198.51.100.7/32"},
		{name: "Forwarded chain", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=1.1.1.1, for=198.51.100.7;proto=http, for=10.0.0.2"}, want: "198.51.100.7/32"},
		{name: "Forwarded answer in earlier line", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7", "for=10.0.0.2"}, want: "198.51.100.7/32"},
		{name: "Forwarded comma inside quotes", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for=198.51.100.7;ext="a, for=1.1.1.1", for=10.0.0.2`}, want: "198.51.100.7/32"},
		{name: "Forwarded unknown", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7, for=unknown"}, want: "10.0.0.1/32"},
		{name: "Forwarded obfuscated identifier", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7, for=_hidden"}, want: "10.0.0.1/32"},
		{name: "Forwarded garbage between client and proxy", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7, for=_hidden, for=10.0.0.2"}, want: "10.0.0.2/32"},
		{name: "Forwarded quote never closes", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for=198.51.100.7, for="10.0.0.2`}, want: "10.0.0.1/32"},
		{name: "Forwarded duplicated for", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7;for=1.1.1.1"}, want: "10.0.0.1/32"},
		{name: "Forwarded unquoted IPv6", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=[2001:db8::1]"}, want: "10.0.0.1/32"},
		{name: "Forwarded unquoted port", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7:80"}, want: "10.0.0.1/32"},
		{name: "Forwarded IPv6 without brackets", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for="2001:db8::1"`}, want: "10.0.0.1/32"},
		{name: "Forwarded element without for", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=198.51.100.7, proto=https"}, want: "10.0.0.1/32"},
		{name: "Forwarded empty for", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for=""`}, want: "10.0.0.1/32"},
		{name: "Forwarded escaped for", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for="198.51.100.\7"`}, want: "10.0.0.1/32"},
		{name: "Forwarded mapped trusted hop", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{`for=198.51.100.7, for="[::ffff:10.0.0.2]"`}, want: "198.51.100.7/32"},
		{name: "Forwarded all trusted", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{"for=10.0.0.3;proto=https, for=10.0.0.2"}, want: "10.0.0.3/32"},
		{name: "Forwarded empty elements and pairs", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: fwd, lines: []string{",, ;for=198.51.100.7;; , ,"}, want: "198.51.100.7/32"},
		{name: "Forwarded never falls back to XFF", forwarded: true, trusted: proxies, peer: "10.0.0.1:80", header: xff, lines: []string{"198.51.100.7"}, want: "10.0.0.1/32"},
		{name: "Forwarded from untrusted public peer", forwarded: true, trusted: proxies, peer: "203.0.113.50:80", header: fwd, lines: []string{"for=198.51.100.7"}, want: "203.0.113.50/32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := newIgnoredCounter()
			cfg := Config{
				Forwarded:     tt.forwarded,
				IPv6Bits:      tt.bits,
				MeterProvider: calls.mp,
				Logger:        slog.New(slog.DiscardHandler),
			}
			if tt.trusted != "" {
				cfg.TrustedProxies = trusted(t, tt.trusted)
			}
			r := resolver(t, cfg)
			req := request(tt.peer, tt.header, tt.lines...)
			want := netip.MustParsePrefix(tt.want)
			if got := r.Key(req); got != want {
				t.Errorf("Key = %v, want %v", got, want)
			}
			if got := calls.load(t); int(got) != tt.untrusted {
				t.Errorf("ignored forwarding counted %d times, want %d", got, tt.untrusted)
			}
			// Addr is the unmasked address the key was cut from.
			addr := r.Addr(req)
			if want == NonIPKey() {
				if addr.IsValid() {
					t.Errorf("Addr = %v for a non-IP peer, want the zero Addr", addr)
				}
			} else if !want.Contains(addr) {
				t.Errorf("Addr = %v, not inside key %v", addr, want)
			}
			// Explain tells the same story and counts nothing.
			before := calls.load(t)
			if e := r.Explain(req); e.Key != want {
				t.Errorf("Explain().Key = %v, want %v", e.Key, want)
			}
			if calls.load(t) != before {
				t.Errorf("Explain counted an ignored forwarding header")
			}
		})
	}
}

func TestAddr(t *testing.T) {
	r := resolver(t, Config{TrustedProxies: trusted(t, proxies)})
	tests := []struct {
		name  string
		peer  string
		lines []string
		want  netip.Addr
	}{
		{"peer", "[2001:db8::1%eth0]:80", nil, netip.MustParseAddr("2001:db8::1")},
		{"mapped client", "10.0.0.1:80", []string{"::ffff:198.51.100.7"}, netip.MustParseAddr("198.51.100.7")},
		{"IPv6 client unmasked", "10.0.0.1:80", []string{"[2001:db8:a:b:1:2:3:4]:9"}, netip.MustParseAddr("2001:db8:a:b:1:2:3:4")},
		{"unix peer", "@", nil, netip.Addr{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Addr(request(tt.peer, "X-Forwarded-For", tt.lines...)); got != tt.want {
				t.Errorf("Addr = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		err  string // substring; empty means no error
	}{
		{"zero", Config{}, ""},
		{"bits 32", Config{IPv6Bits: 32}, ""},
		{"bits 128", Config{IPv6Bits: 128}, ""},
		{"bits 31", Config{IPv6Bits: 31}, "clientip: IPv6Bits 31"},
		{"bits 129", Config{IPv6Bits: 129}, "clientip: IPv6Bits 129"},
		{"bits negative", Config{IPv6Bits: -1}, "clientip: IPv6Bits -1"},
		{"IPv4 /0", Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}, "trusts every client"},
		{"IPv6 /0", Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::/0")}}, "trusts every client"},
		{"mapped /96", Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::ffff:0.0.0.0/96")}}, "trusts every client"},
		{"invalid prefix", Config{TrustedProxies: []netip.Prefix{{}}}, "clientip: invalid trusted proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("New: %v, want no error", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("New: %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

// TestNewCopiesAndCanonicalises checks that New masks and unmaps the trusted
// prefixes and keeps its own copy, so a caller editing its slice later
// changes nothing.
func TestNewCopiesAndCanonicalises(t *testing.T) {
	list := []netip.Prefix{
		netip.MustParsePrefix("::ffff:10.0.0.0/104"), // 10.0.0.0/8, mapped
		netip.MustParsePrefix("192.0.2.77/24"),       // not masked
	}
	r := resolver(t, Config{TrustedProxies: list})
	list[0] = netip.MustParsePrefix("203.0.113.0/24")
	if got, want := r.Key(request("10.1.2.3:80", "X-Forwarded-For", "198.51.100.7")), netip.MustParsePrefix("198.51.100.7/32"); got != want {
		t.Errorf("mapped prefix: Key = %v, want %v", got, want)
	}
	if got, want := r.Key(request("192.0.2.9:80", "X-Forwarded-For", "198.51.100.7")), netip.MustParsePrefix("198.51.100.7/32"); got != want {
		t.Errorf("unmasked prefix: Key = %v, want %v", got, want)
	}
	if got, want := r.Key(request("203.0.113.1:80", "X-Forwarded-For", "198.51.100.7")), netip.MustParsePrefix("203.0.113.1/32"); got != want {
		t.Errorf("edited slice: Key = %v, want %v", got, want)
	}
}

// TestUntrustedWarnsOnce checks that a forgotten local proxy is counted on
// every request but logged once, and that the log line at Warn does not
// carry the address.
func TestUntrustedWarnsOnce(t *testing.T) {
	var buf bytes.Buffer
	calls := newIgnoredCounter()
	r := resolver(t, Config{
		MeterProvider: calls.mp,
		Logger:        slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	for range 3 {
		r.Key(request("192.168.7.7:5000", "X-Forwarded-For", "198.51.100.7"))
	}
	if got := calls.load(t); got != 3 {
		t.Errorf("ignored forwarding counted %d times, want 3", got)
	}
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Errorf("got %d warnings, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "192.168.7.7") || strings.Contains(out, "198.51.100.7") {
		t.Errorf("warning carries an address:\n%s", out)
	}
}

// ignoredCounter reads admit.clientip.ignored_forwarding from a meter
// provider of its own.
type ignoredCounter struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newIgnoredCounter() *ignoredCounter {
	reader := sdkmetric.NewManualReader()
	return &ignoredCounter{reader: reader, mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}
}

func (c *ignoredCounter) load(t *testing.T) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := c.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "admit.clientip.ignored_forwarding" {
				continue
			}
			var n int64
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if p.Attributes.Len() != 0 {
					t.Errorf("ignored_forwarding carries %v, want no attributes", p.Attributes.ToSlice())
				}
				n += p.Value
			}
			return n
		}
	}
	return 0
}

func TestExplain(t *testing.T) {
	r := resolver(t, Config{TrustedProxies: trusted(t, proxies)})
	e := r.Explain(request("10.0.0.1:80", "X-Forwarded-For", "1.1.1.1, 198.51.100.7, bogus, 10.0.0.3", "10.0.0.2"))
	if want := netip.MustParseAddr("10.0.0.1"); e.Peer != want || !e.PeerTrusted {
		t.Errorf("Peer = %v trusted %v, want %v trusted", e.Peer, e.PeerTrusted, want)
	}
	if e.Header != "X-Forwarded-For" {
		t.Errorf("Header = %q, want X-Forwarded-For", e.Header)
	}
	want := []Hop{
		{Text: "10.0.0.2", Addr: netip.MustParseAddr("10.0.0.2"), Trusted: true},
		{Text: "10.0.0.3", Addr: netip.MustParseAddr("10.0.0.3"), Trusted: true},
		{Text: "bogus"},
	}
	if len(e.Hops) != len(want) {
		t.Fatalf("Hops = %+v, want %+v", e.Hops, want)
	}
	for i := range want {
		if e.Hops[i] != want[i] {
			t.Errorf("Hops[%d] = %+v, want %+v", i, e.Hops[i], want[i])
		}
	}
	if e.Reason != ReasonMalformed {
		t.Errorf("Reason = %q, want %q", e.Reason, ReasonMalformed)
	}
	if want := netip.MustParseAddr("10.0.0.3"); e.Addr != want {
		t.Errorf("Addr = %v, want %v", e.Addr, want)
	}
	if want := netip.MustParsePrefix("10.0.0.3/32"); e.Key != want {
		t.Errorf("Key = %v, want %v", e.Key, want)
	}

	reasons := []struct {
		name string
		cfg  Config
		req  *http.Request
		want Reason
	}{
		{"non-IP peer", Config{}, request("@", "", ""), ReasonNonIPPeer},
		{"untrusted peer", Config{}, request("198.51.100.7:1", "", ""), ReasonUntrustedPeer},
		{"no header", Config{TrustedProxies: trusted(t, proxies)}, request("10.0.0.1:1", "", ""), ReasonNoHeader},
		{"client found", Config{TrustedProxies: trusted(t, proxies)}, request("10.0.0.1:1", "X-Forwarded-For", "198.51.100.7"), ReasonClient},
		{"all trusted", Config{TrustedProxies: trusted(t, proxies)}, request("10.0.0.1:1", "X-Forwarded-For", "10.0.0.2"), ReasonAllTrusted},
		{"Forwarded malformed", Config{TrustedProxies: trusted(t, proxies), Forwarded: true}, request("10.0.0.1:1", "Forwarded", "for=unknown"), ReasonMalformed},
	}
	for _, tt := range reasons {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolver(t, tt.cfg).Explain(tt.req).Reason; got != tt.want {
				t.Errorf("Reason = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseTrustedProxies(t *testing.T) {
	tests := []struct {
		raw  string
		want string // prefixes joined by spaces
		err  string // exact error text; empty means no error
	}{
		{"", "", ""},
		{"10.0.0.0/8, ::1/128, 192.0.2.7", "10.0.0.0/8 ::1/128 192.0.2.7/32", ""},
		{"10.0.0.0/8 fd00::/8\t2001:db8::1\n", "10.0.0.0/8 fd00::/8 2001:db8::1/128", ""},
		{" ,10.0.0.0/8,,, 172.16.0.0/12 , ", "10.0.0.0/8 172.16.0.0/12", ""},
		{"10.1.2.3/8", "10.0.0.0/8", ""},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", ""},
		{"::ffff:192.0.2.7", "192.0.2.7/32", ""},
		{"10.0.0.0/33", "", `clientip: parse "10.0.0.0/33": want a prefix length from 1 to 32 after the slash`},
		{"2001:db8::/x", "", `clientip: parse "2001:db8::/x": want a prefix length from 1 to 128 after the slash`},
		{"10.0.0.300/8", "", `clientip: parse "10.0.0.300/8": "10.0.0.300" is not an IP address`},
		{"10.0.0.0/8, nonsense", "", `clientip: parse "nonsense": not an IP address or CIDR prefix`},
		{"fe80::1%eth0/64", "", `clientip: parse "fe80::1%eth0/64": zones are not allowed`},
		{"0.0.0.0/0", "", `clientip: parse "0.0.0.0/0": 0.0.0.0/0 trusts every client; list your proxies`},
		{"::/0", "", `clientip: parse "::/0": ::/0 trusts every client; list your proxies`},
		{"fe80::1%eth0", "", `clientip: parse "fe80::1%eth0": zones are not allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseTrustedProxies(tt.raw)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if g := strings.Join(s, " "); g != tt.want {
				t.Errorf("got %q, want %q", g, tt.want)
			}
		})
	}
}

func TestParseTrustedProxiesTrustAll(t *testing.T) {
	_, err := ParseTrustedProxies("10.0.0.0/8 0.0.0.0/0")
	if !errors.Is(err, ErrTrustAll) {
		t.Errorf("error %v, want one wrapping ErrTrustAll", err)
	}
}

// Trusts compares an address in the canonical form the walk does, so a
// check elsewhere cannot miss a trusted proxy sent mapped or with a zone.
func TestTrustsCanonicalForm(t *testing.T) {
	r, err := New(Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fe80::/64")}})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "fe80::1%eth0": true, "11.0.0.1": false, "::ffff:11.0.0.1": false, "2001:db8::1": false} {
		if got := r.Trusts(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Trusts(%s) = %v, want %v", addr, got, want)
		}
	}
	if none, _ := New(Config{}); none.Trusts(netip.MustParseAddr("127.0.0.1")) {
		t.Error("the zero Config trusts 127.0.0.1")
	}
}
