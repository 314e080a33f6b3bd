package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// BenchmarkServe serves a refusal, as the proxy's door writes one, to
// clients on 64 kept-alive loopback connections at once, through the
// engine and through net/http's server, in one run:
//
//	go test -run XXX -bench BenchmarkServe -count 8 ./server/internal/h1
//
// With the cores busy, time per answer is what the server and the clients
// spend; the clients' part, and their allocations, are the same for both.
func BenchmarkServe(b *testing.B) {
	refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		h["Retry-After"] = []string{"1"}
		h["X-Content-Type-Options"] = []string{"nosniff"}
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, "Too Many Requests: limit \"link\"\n")
	})
	for _, server := range []string{"engine", "nethttp"} {
		b.Run("server="+server, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: refuse, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
			if server == "engine" {
				e := &Server{HTTP: srv}
				go func() { _ = e.Serve(ln) }()
				defer e.Close()
			} else {
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
			}
			req := []byte("GET /l/x HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
			b.ReportAllocs()
			b.SetParallelism(32) // 64 connections on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				br := bufio.NewReader(c)
				for pb.Next() {
					if _, err := c.Write(req); err != nil {
						b.Error(err)
						return
					}
					if err := readAnswer(br); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// readAnswer reads one answer with a Content-Length, allocating nothing.
func readAnswer(br *bufio.Reader) error {
	length := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		const name = "Content-Length: "
		if len(line) > len(name) && string(line[:len(name)]) == name {
			n, err := strconv.Atoi(string(line[len(name) : len(line)-2]))
			if err != nil {
				return err
			}
			length = n
		}
	}
	if length < 0 {
		return io.ErrUnexpectedEOF
	}
	_, err := br.Discard(length)
	return err
}
