package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/h1"
)

// servedCases are the requests both benchmarks serve: a link route whose
// budget admits everything, to an upstream, and a flood of one client far
// over the default link budget, answered 429; then the same two decisions
// asked of admit auth as nginx's auth_request asks them (deploy/auth), whose
// cost is held to the proxy's refusal's.
var servedCases = []servedCase{
	{name: "allowed", args: []string{"--config", "testdata/bench-allowed.yaml"}, status: "200"},
	{name: "refused", status: "429"},
	{name: "auth allowed", auth: true, args: []string{"--config", "testdata/bench-auth-allowed.yaml"}, status: "200"},
	{name: "auth refused", auth: true, status: "429"},
}

type servedCase struct {
	name   string
	auth   bool     // admit auth, asked by a front at 192.0.2.1, in place of the proxy
	args   []string // besides the upstream (the proxy's) and the link route
	status string   // of every answer
}

// nginxAuthRequest is a decision request as deploy/auth/nginx.conf sends it, with a
// browser's usual fields, which nginx passes on.
const nginxAuthRequest = "GET /_admit HTTP/1.1\r\nHost: app.example\r\nX-Original-Method: GET\r\nX-Original-URI: /l/x\r\n" +
	"X-Forwarded-For: 198.51.100.7\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"

// request is what the case's client sends, with host as the Host of a
// request to the proxy.
func (tc servedCase) request(host string) []byte {
	if tc.auth {
		return []byte(nginxAuthRequest)
	}
	return []byte("GET /l/x HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
}

// config is the case's server configuration, with a clock that stands
// still, so that no token comes back during the flood.
func (tc servedCase) config(b *testing.B, upstream string) config.Config {
	args := append([]string{"--route", "link=GET /l/{id}"}, tc.args...)
	var cfg config.Config
	if tc.auth {
		var err error
		args = append(args, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--trusted-proxy", "192.0.2.1/32,127.0.0.1/32")
		cfg, err = config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...), args, func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
		if err != nil {
			b.Fatal(err)
		}
	} else {
		cfg = serverConfig(b, append(args, "--upstream", upstream)...)
	}
	cfg.Now = frozen()
	return cfg
}

// BenchmarkServed sends requests through the whole server (listener, HTTP/1.1
// engine, front, door, upstream client) from 64 kept-alive loopback
// connections at once, as scripts/bench-proxy's wrk does: a link route whose
// budget admits everything, to an upstream on loopback, and a flood of one
// client far over the default link budget, answered 429.
//
//	go test -run XXX -bench BenchmarkServed -count 8 ./server
//
// With both cores busy, time per request is what the server, the clients
// and the upstream spend on it; the clients' and the upstream's part is the
// same from one build to another, so builds compare side by side in
// benchstat, and the allocations are the server's but for the clients' few.
func BenchmarkServed(b *testing.B) {
	up := benchUpstream(b)
	for _, tc := range servedCases {
		b.Run(tc.name, func(b *testing.B) {
			r := startConfig(b, tc.config(b, up))
			addr := r.s.ln.Addr().String()
			req := tc.request(addr)
			if tc.status == "429" { // spend the burst, so that every request of the loop is refused
				c, br := dialServed(b, addr)
				for range 100 {
					if _, err := readServed(c, br, req); err != nil {
						b.Fatal(err)
					}
				}
				c.Close()
			}
			b.ReportAllocs()
			b.SetParallelism(32) // 64 connections on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				c, br := dialServed(b, addr)
				defer c.Close()
				for pb.Next() {
					status, err := readServed(c, br, req)
					if err != nil {
						b.Error(err)
						return
					}
					if string(status[:]) != tc.status {
						b.Errorf("got status %s, want %s", status[:], tc.status)
						return
					}
				}
			})
		})
	}
}

func dialServed(b *testing.B, addr string) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// readServed sends req and reads its answer, which must have a length,
// allocating nothing, and returns its status.
func readServed(c net.Conn, br *bufio.Reader, req []byte) (status [3]byte, err error) {
	if _, err := c.Write(req); err != nil {
		return status, err
	}
	length := -1
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return status, err
		}
		if first && len(line) >= 12 {
			copy(status[:], line[9:12])
		}
		if len(line) <= 2 {
			break
		}
		const name = "Content-Length: "
		if len(line) > len(name) && string(line[:len(name)]) == name {
			if length, err = strconv.Atoi(string(line[len(name) : len(line)-2])); err != nil {
				return status, err
			}
		}
	}
	if length < 0 {
		return status, io.ErrUnexpectedEOF
	}
	_, err = br.Discard(length)
	return status, err
}

// BenchmarkServedCPU serves requests through the server's HTTP/1.1 engine,
// front and door from one in-memory connection that always has the next
// request ready and takes every answer at once, so that the server never
// waits and no system call is made for the client: time per request is the
// server's own CPU (but for the upstream's, allowed), steadier from run to
// run than BenchmarkServed, which adds the kernel's share.
//
//	go test -run XXX -bench BenchmarkServedCPU -count 8 ./server
func BenchmarkServedCPU(b *testing.B) {
	up := benchUpstream(b)
	for _, tc := range servedCases {
		b.Run(tc.name, func(b *testing.B) {
			s, err := newServer(b.Context(), tc.config(b, up), slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			engine := &h1.Server{HTTP: s.proxyServer(log.New(io.Discard, "", 0))}
			ln := &memListener{conns: make(chan net.Conn, 1), closed: make(chan struct{})}
			go func() { _ = engine.Serve(ln) }()
			defer engine.Close()
			if tc.status == "429" { // spend the burst
				c := newMemConn(100, "", tc.request("admit"))
				ln.conns <- c
				<-c.done
			}
			c := newMemConn(b.N, tc.status, tc.request("admit"))
			b.ReportAllocs()
			b.ResetTimer()
			ln.conns <- c
			<-c.done
			b.StopTimer()
			if c.err != nil {
				b.Fatal(c.err)
			}
		})
	}
}

// memConn is a client connection in memory: its reads return a request
// at a time, until it has taken n answers, and it checks the status of
// each answer.
type memConn struct {
	status string // what every answer must be; "": any
	req    []byte
	done   chan struct{}
	once   sync.Once

	// A watch reads on a goroutine of its own while the handler's goroutine writes
	// the answer.
	mu  sync.Mutex // guards the following
	n   int
	off int // of req, read
	err error
}

func newMemConn(n int, status string, req []byte) *memConn {
	return &memConn{n: n, status: status, req: req, done: make(chan struct{})}
}

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The end comes between requests: a watch may have read one ahead.
	if (c.n <= 0 || c.err != nil) && c.off == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.req[c.off:])
	c.off = (c.off + n) % len(c.req)
	return n, nil
}

func (c *memConn) Write(p []byte) (int, error) {
	// An answer's first write begins with its status line; a body may
	// follow in writes of its own (the benchmark's bodies never begin so).
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return len(p), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status != "" && (len(p) < 12 || string(p[9:12]) != c.status) && c.err == nil {
		c.err = fmt.Errorf("answer %q, want status %s", p, c.status)
	}
	c.n--
	return len(p), nil
}

func (c *memConn) Close() error                     { c.once.Do(func() { close(c.done) }); return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1234} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// memListener hands out the connections sent on conns.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *memListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
