// Command benchupstream answers every request at once with 200 and a short
// body: the app behind the proxies that scripts/bench-proxy measures, so that
// the figures are the proxies' own. It is not part of the admit binary.
//
//	benchupstream [--listen 127.0.0.1:0]
//
// It prints "listening on ADDR" once it accepts connections.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	body := []byte("ok\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(body)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Println("listening on", ln.Addr())
	log.Fatal(srv.Serve(ln))
}
