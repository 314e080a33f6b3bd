package clientip_test

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/admitgo/admit/clientip"
)

// The zero Config trusts nobody: the key is the TCP peer, masked.
func ExampleNew() {
	r, err := clientip.New(clientip.Config{})
	if err != nil {
		log.Fatal(err)
	}
	req := &http.Request{RemoteAddr: "[2001:db8:a:b:1:2:3:4]:4711", Header: http.Header{}}
	req.Header.Set("X-Forwarded-For", "198.51.100.7") // ignored: nobody is trusted
	fmt.Println(r.Key(req))
	fmt.Println(r.Addr(req))
	// Output:
	// 2001:db8:a:b::/64
	// 2001:db8:a:b:1:2:3:4
}

// Behind one reverse proxy, trust its address; the key is the right-most
// address it did not add itself.
func ExampleResolver_Key() {
	proxies, err := clientip.ParseTrustedProxies("10.0.0.0/8")
	if err != nil {
		log.Fatal(err)
	}
	r, err := clientip.New(clientip.Config{TrustedProxies: proxies})
	if err != nil {
		log.Fatal(err)
	}
	req := &http.Request{RemoteAddr: "10.0.0.1:51000", Header: http.Header{}}
	req.Header.Set("X-Forwarded-For", "1.1.1.1, 198.51.100.7, 10.0.0.2") // 1.1.1.1 is what the client claimed
	fmt.Println(r.Key(req))
	// Output: 198.51.100.7/32
}

// With Forwarded set, only the RFC 7239 Forwarded header is read.
func ExampleConfig_forwarded() {
	r, err := clientip.New(clientip.Config{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Forwarded:      true,
	})
	if err != nil {
		log.Fatal(err)
	}
	req := &http.Request{RemoteAddr: "10.0.0.1:51000", Header: http.Header{}}
	req.Header.Set("Forwarded", `for="[2001:db8:a:b::7]:4711";proto=https, for=10.0.0.2`)
	fmt.Println(r.Key(req))
	// Output: 2001:db8:a:b::/64
}

func ExampleParseTrustedProxies() {
	proxies, err := clientip.ParseTrustedProxies("10.0.0.0/8, ::1/128 192.0.2.7")
	fmt.Println(proxies, err)
	_, err = clientip.ParseTrustedProxies("0.0.0.0/0")
	fmt.Println(err)
	// Output:
	// [10.0.0.0/8 ::1/128 192.0.2.7/32] <nil>
	// clientip: parse "0.0.0.0/0": 0.0.0.0/0 trusts every client; list your proxies
}

func ExampleResolver_Explain() {
	r, err := clientip.New(clientip.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	if err != nil {
		log.Fatal(err)
	}
	req := &http.Request{RemoteAddr: "10.0.0.1:51000", Header: http.Header{}}
	req.Header.Set("X-Forwarded-For", "198.51.100.7, unknown, 10.0.0.2")
	e := r.Explain(req)
	fmt.Println("peer", e.Peer, "trusted", e.PeerTrusted, "header", e.Header)
	for _, h := range e.Hops {
		fmt.Printf("hop %q addr %v trusted %v\n", h.Text, h.Addr, h.Trusted)
	}
	fmt.Println(e.Reason, e.Key)
	// Output:
	// peer 10.0.0.1 trusted true header X-Forwarded-For
	// hop "10.0.0.2" addr 10.0.0.2 trusted true
	// hop "unknown" addr invalid IP trusted false
	// malformed-hop 10.0.0.2/32
}

// An L4 load balancer that speaks the PROXY protocol sits in front of the
// server; only its addresses may (and must) send a header.
func ExampleProxyProtocolListener() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	balancers := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}
	ln = clientip.ProxyProtocolListener(ln, balancers, 2*time.Second)

	r, err := clientip.New(clientip.Config{}) // the PROXY source address is the peer
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			fmt.Fprintln(w, r.Key(req))
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(ln)
	defer srv.Close()
}
