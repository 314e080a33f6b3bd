// Command bareproxy is a plain httputil.ReverseProxy with net/http's Transport
// as admit configures it (upstream.Standard), admit's copy buffers and server
// limits, and nothing else: the baseline that scripts/bench-proxy measures
// admit against. It is not part of the admit binary.
//
//	bareproxy --upstream http://127.0.0.1:3000 [--listen 127.0.0.1:0]
//
// It prints "listening on ADDR" once it accepts connections.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/admitgo/admit/internal/upstream"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	target := flag.String("upstream", "", "the app to proxy to")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		log.Fatalf("bareproxy: --upstream %q: want an http URL", *target)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport:  upstream.Standard(),
		BufferPool: upstream.BufferPool(),
	}
	srv := &http.Server{Handler: proxy, MaxHeaderBytes: 64 << 10, ReadHeaderTimeout: 10 * time.Second}
	fmt.Println("listening on", ln.Addr())
	log.Fatal(srv.Serve(ln))
}
