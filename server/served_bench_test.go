package server

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"testing"
)

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
	for _, tc := range []struct {
		name   string
		args   []string
		status string
	}{
		{"allowed", []string{"--config", "testdata/bench-allowed.yaml"}, "200"},
		{"refused", nil, "429"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := serverConfig(b, append([]string{"--upstream", up, "--route", "link=GET /l/{id}"}, tc.args...)...)
			cfg.Now = frozen() // no token comes back during the flood
			r := startConfig(b, cfg)
			addr := r.s.ln.Addr().String()
			req := []byte("GET /l/x HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
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
