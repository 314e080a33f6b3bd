package clientip

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// benchCases are the requests BenchmarkKey and TestKeyAllocs measure.
func benchCases(t testing.TB) []struct {
	name string
	r    *Resolver
	req  *http.Request
} {
	chain := []string{"198.51.100.7"}
	for i := range 15 {
		chain = append(chain, netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 2)}).String())
	}
	trust := Config{TrustedProxies: trusted(t, "10.0.0.0/8")}
	return []struct {
		name string
		r    *Resolver
		req  *http.Request
	}{
		{"peer", resolver(t, Config{}), request("198.51.100.7:4711", "")},
		{"xff3", resolver(t, trust), request("10.0.0.1:80", "X-Forwarded-For", "198.51.100.7, 10.0.0.3, 10.0.0.2")},
		{"chain16", resolver(t, trust), request("10.0.0.1:80", "X-Forwarded-For", strings.Join(chain, ", "))},
		{"forwarded3", resolver(t, Config{TrustedProxies: trust.TrustedProxies, Forwarded: true}),
			request("10.0.0.1:80", "Forwarded", `for="198.51.100.7:4711";proto=https, for=10.0.0.3, for=10.0.0.2`)},
	}
}

func BenchmarkKey(b *testing.B) {
	for _, bc := range benchCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.r.Key(bc.req)
			}
		})
	}
}

var sink netip.Prefix

// TestKeyAllocs pins the hot path the door calls on every request: the
// peer alone and a trusted peer with a short chain cost no allocation.
func TestKeyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, bc := range benchCases(t) {
		if bc.name == "chain16" {
			continue
		}
		t.Run(bc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(1000, func() { sink = bc.r.Key(bc.req) }); n != 0 {
				t.Errorf("Key allocates %v times per call, want 0", n)
			}
		})
	}
}
