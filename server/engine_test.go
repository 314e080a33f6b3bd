package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/admitgo/admit/internal/upstream"
)

// TestHTTPEngine: --http-engine net/http serves the proxy's listener with
// net/http's server alone and forwards with a Transport alone, under
// admit's bound on response heads; admit's engine and direct path are the
// default.
func TestHTTPEngine(t *testing.T) {
	app := upstreamApp(t)
	for _, tc := range []struct {
		engine string
		own    bool // admit's engine and direct path
	}{{"admit", true}, {"net/http", false}} {
		t.Run(tc.engine, func(t *testing.T) {
			r := start(t, "--upstream", app.URL, "--http-engine", tc.engine)
			if got := r.s.h1Engine(&http.Server{}) != nil; got != tc.own {
				t.Errorf("h1 engine on the proxy's listener: got %v, want %v", got, tc.own)
			}
			p := r.s.proxy.(*proxy)
			if got := p.direct != nil; got != tc.own {
				t.Errorf("direct upstream path: got %v, want %v", got, tc.own)
			}
			if !tc.own {
				// The Transport alone, but under the client's rules of what
				// may follow an answer on a connection (a HEAD's closes it).
				tr, ok := p.reverse.Transport.(transportOnly)
				if !ok || tr.MaxResponseHeaderBytes != upstream.MaxResponseHeaderBytes {
					t.Errorf("transport: got %T, want admit's client without its direct path, with MaxResponseHeaderBytes %d", p.reverse.Transport, upstream.MaxResponseHeaderBytes)
				}
			}
			closed := make(chan bool, 1)
			head := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { closed <- req.Close }))
			t.Cleanup(head.Close)
			rh := start(t, "--upstream", head.URL, "--http-engine", tc.engine)
			if resp, _ := rh.do(t, "HEAD", "/x", ""); resp.StatusCode != http.StatusOK {
				t.Fatalf("HEAD /x: got %d, want 200", resp.StatusCode)
			}
			if !<-closed {
				t.Errorf("HEAD /x reached the upstream without Connection: close: its connection could be reused after a body sent anyway")
			}
			if resp, body := r.do(t, "GET", "/x", ""); resp.StatusCode != http.StatusOK || body != "/x" {
				t.Errorf("GET /x: got %d %q, want 200 /x", resp.StatusCode, body)
			}
		})
	}
}

// oneAnswerUpstream answers every request with answer, then closes the
// connection.
func oneAnswerUpstream(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						io.WriteString(c, answer)
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestEngineDifferences pins what docs/operators.md ("The engine switch")
// says differs: a response head the direct path refuses is a 502 under
// admit, where net/http's Transport reads it its own way.
func TestEngineDifferences(t *testing.T) {
	up := oneAnswerUpstream(t, "HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nok")
	for engine, want := range map[string]int{"admit": http.StatusBadGateway, "net/http": http.StatusOK} {
		r := start(t, "--upstream", up, "--http-engine", engine)
		if resp, body := r.do(t, "GET", "/x", ""); resp.StatusCode != want {
			t.Errorf("%s: a folded response header: got %d %q (X-Folded %q), want %d", engine, resp.StatusCode, body, resp.Header.Get("X-Folded"), want)
		}
	}
}
