// Command bareproxy is a plain httputil.ReverseProxy with net/http's Transport
// as admit configures it (upstream.Standard), admit's copy buffers and server
// limits, and nothing else: the baseline that scripts/bench-proxy measures
// admit against. It is not part of the admit binary.
//
//	bareproxy --upstream http://127.0.0.1:3000 [--listen 127.0.0.1:0]
//	bareproxy --refuse net/http|parse|raw [--listen 127.0.0.1:0]
//	bareproxy --loop [--listen 127.0.0.1:0] -- ADMIT FLAGS...
//
// With --refuse it proxies nothing and answers every request with admit's
// refusal of a link request (429, the same header fields and body):
//
//   - net/http: through net/http's server, what a refusal costs before any
//     work of admit's;
//   - parse: by a loop that reads each request with http.ReadRequest, into
//     the *http.Request net/http's server would make, and writes fixed
//     bytes: what deciding on a parsed request costs without a server;
//   - raw: by a loop that reads up to the blank line ending each head and
//     writes fixed bytes, what Go and the kernel cost a request that is
//     neither parsed nor answered by an HTTP server.
//
// With --loop it serves admit's own handler, built from the admit flags
// after "--" (their --listen and the metrics listener unused), by a loop
// that reads each request with http.ReadRequest, as parse does, and writes
// each answer whole, with its length: what admit's handler costs with no
// server around it but net/http's parser, the measurement that said an
// engine of admit's own (server/internal/h1) was worth building.
//
// parse, raw and --loop are instruments, not servers: they take bodiless
// requests only, as wrk sends them, and --loop holds each answer whole and
// drops 1xx answers.
//
// It prints "listening on ADDR" once it accepts connections.
package main

import (
	"bufio"
	"bytes"
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

// refusal is admit's answer to a link request over budget, less the Date
// field that net/http adds.
var refusal = struct {
	header http.Header
	body   string
}{
	header: http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"Ratelimit":              {`"link";r=0;t=1`},
		"Ratelimit-Policy":       {`"link";q=20;w=20`},
		"Retry-After":            {"1"},
		"X-Content-Type-Options": {"nosniff"},
	},
	body: "Too Many Requests: limit \"link\"\n",
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	target := flag.String("upstream", "", "the app to proxy to")
	refuse := flag.String("refuse", "", `answer every request 429 instead of proxying: "net/http", "parse" or "raw"`)
	loop := flag.Bool("loop", false, `serve admit's handler, from the admit flags after "--", in a loop of http.ReadRequest`)
	flag.Parse()
	var handler http.Handler
	switch {
	case *loop:
		handler = admitHandler(flag.Args())
	case *refuse == "":
		u, err := url.Parse(*target)
		if err != nil || u.Host == "" {
			log.Fatalf("bareproxy: --upstream %q: want an http URL", *target)
		}
		handler = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.SetXForwarded()
			},
			Transport:  upstream.Standard(),
			BufferPool: upstream.BufferPool(),
		}
	case *refuse == "net/http":
		handler = http.HandlerFunc(refuseHTTP)
	case *refuse == "parse", *refuse == "raw":
	default:
		log.Fatalf("bareproxy: --refuse %q: want net/http, parse or raw", *refuse)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	if *loop {
		log.Fatal(serveLoop(ln, handler))
	}
	if handler == nil {
		log.Fatal(serveFixed(ln, *refuse == "parse"))
	}
	srv := &http.Server{Handler: handler, MaxHeaderBytes: 64 << 10, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

func refuseHTTP(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	for k, v := range refusal.header {
		h[k] = v
	}
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(refusal.body))
}

// serveFixed answers each head read on ln's connections with the refusal's
// bytes, as net/http writes them (the header sorted, then Date and
// Content-Length), with the Date of the connection's start. With parse,
// each request is read by http.ReadRequest; otherwise only up to its blank
// line.
func serveFixed(ln net.Listener, parse bool) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			var answer bytes.Buffer
			answer.WriteString("HTTP/1.1 429 Too Many Requests\r\n")
			_ = refusal.header.Write(&answer)
			fmt.Fprintf(&answer, "Date: %s\r\nContent-Length: %d\r\n\r\n%s",
				time.Now().UTC().Format(http.TimeFormat), len(refusal.body), refusal.body)
			r := bufio.NewReader(c)
			for {
				if parse {
					if _, err := http.ReadRequest(r); err != nil {
						return
					}
				} else if err := skipHead(r); err != nil {
					return
				}
				if _, err := c.Write(answer.Bytes()); err != nil {
					return
				}
			}
		}()
	}
}

// skipHead reads through the next blank line.
func skipHead(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}
