package server

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/admitgo/admit/internal/upstream"
	"github.com/admitgo/admit/server/internal/config"
)

// transports are the two ways the proxy forwards: admit's client, whose
// direct path takes plain HTTP/1.1 requests, and net/http's Transport alone,
// through httputil.ReverseProxy.
var transports = []struct {
	name string
	new  func() http.RoundTripper
}{
	{"direct", func() http.RoundTripper { return upstream.Transport() }},
	{"reverse", func() http.RoundTripper { return upstream.Standard() }},
}

// TestProxyPathsSendAlike: whichever way a request goes, the upstream gets
// the same request: the managed headers stripped, the forwarding headers
// set, the hop-by-hop headers gone. (net/http's Transport also asks for
// gzip, which it decodes itself.)
func TestProxyPathsSendAlike(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Del("Accept-Encoding")
		var b strings.Builder
		b.WriteString(r.Method + " " + r.RequestURI + " Host=" + r.Host + "; ")
		h.WriteSubset(&b, nil)
		mu.Lock()
		seen = append(seen, b.String())
		mu.Unlock()
		io.WriteString(w, "ok\n")
	}))
	defer app.Close()
	requests := []struct {
		method, path string
		headers      []string
	}{
		{"GET", "/l/x?a=1;b=2", []string{"X-Real-Ip: 203.0.113.1", "X_Forwarded_For: 203.0.113.2",
			"X-Http-Method-Override: DELETE", "X-Forwarded-Host: evil.test", "Forwarded: for=203.0.113.3",
			"Connection: X-Drop", "X-Drop: 1", "X-Original-Url: /admin", "Te: trailers", "User-Agent: ua/1"}},
		{"POST", "/u/form", []string{"Content-Type: application/x-www-form-urlencoded", "Proxy-Connection: keep-alive"}},
		{"GET", "/u/plain?q=1", []string{"Keep-Alive: timeout=5"}},
		{"GET", "/u/facts", append(append([]string{"X_Scheme: https", "Connection: X-Proxied-Https", "X-Proxied-Https: on"},
			forgedFacts...), ordinaryHeaders...)},
	}
	for _, tr := range transports {
		cfg := serverConfig(t, "--upstream", app.URL, "--route", "link=GET /l/{id}")
		cfg.Transport = tr.new()
		r := startConfig(t, cfg)
		for _, req := range requests {
			body := ""
			if req.method == "POST" {
				body = "a=1"
			}
			r.do(t, req.method, req.path, body, req.headers...)
		}
		// Each server tells its own address as the host.
		mu.Lock()
		for i := len(seen) - len(requests); i < len(seen); i++ {
			seen[i] = strings.ReplaceAll(seen[i], strings.TrimPrefix(r.url, "http://"), "admit")
		}
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2*len(requests) {
		t.Fatalf("the upstream saw %d requests, want %d", len(seen), 2*len(requests))
	}
	for i := range requests {
		if direct, reverse := seen[i], seen[len(requests)+i]; direct != reverse {
			t.Errorf("request %d:\ndirect  %q\nreverse %q", i, direct, reverse)
		}
	}
}

// benchUpstream answers every request on loopback with the same short
// answer, reading heads without parsing them, so that a benchmark's
// allocations are the proxy's.
func benchUpstream(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nok\n")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(line) <= 2 { // the empty line: the head is whole
						if _, err := c.Write(answer); err != nil {
							return
						}
					}
				}
			})
		}
	})
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// sink is a ResponseWriter that keeps nothing, reused across requests.
type sink struct {
	h      http.Header
	status int
}

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) WriteHeader(code int)        { s.status = code }
func (s *sink) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkHop serves requests through the server's whole handler to an
// upstream on loopback, over the direct path and over httputil.ReverseProxy
// with net/http's Transport, in one run: what the hop costs, allocations
// counted.
func BenchmarkHop(b *testing.B) {
	up := benchUpstream(b)
	for _, tr := range transports {
		for _, route := range []struct{ name, path string }{{"unlimited", "/u/x"}, {"allowed", "/l/x"}} {
			b.Run(tr.name+"/"+route.name, func(b *testing.B) {
				cfg, err := config.Parse([]string{"--upstream", up, "--route", "link=GET /l/{id}", "--config", "testdata/bench-allowed.yaml",
					"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				cfg.Now, cfg.Transport = frozen(), tr.new()
				s, err := newServer(b.Context(), cfg, slog.New(slog.DiscardHandler))
				if err != nil {
					b.Fatal(err)
				}
				defer s.close()
				req := httptest.NewRequest("GET", route.path, nil)
				req.RemoteAddr = "192.0.2.1:1234"
				req.Header.Set("User-Agent", "bench/1")
				req.Header.Set("Accept", "*/*")
				w := &sink{h: make(http.Header)}
				b.ReportAllocs()
				for b.Loop() {
					clear(w.h)
					w.status = 0
					s.handler.ServeHTTP(w, req)
					if w.status != http.StatusOK {
						b.Fatalf("got %d, want 200", w.status)
					}
				}
			})
		}
	}
}
