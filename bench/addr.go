package bench

import (
	"net/http"
	"net/netip"
)

// Client returns the RemoteAddr of client n: the IPv4 address 1.0.0.0 + n
// with a fixed port, so that 4,278,190,080 clients are distinct.
func Client(n uint32) string {
	a := 1<<24 + n
	ip := netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
	return netip.AddrPortFrom(ip, 40000).String()
}

// Requests returns GET requests from n distinct clients, 0 to n-1.
func Requests(n int) []*http.Request {
	rs := make([]*http.Request, n)
	for i := range rs {
		rs[i] = Request(Client(uint32(i)))
	}
	return rs
}

// Request returns a GET request without a body from remoteAddr.
func Request(remoteAddr string) *http.Request {
	r, err := http.NewRequest(http.MethodGet, "http://example.com/links/x", nil)
	if err != nil {
		panic(err) // a constant URL
	}
	r.RemoteAddr = remoteAddr
	return r
}
