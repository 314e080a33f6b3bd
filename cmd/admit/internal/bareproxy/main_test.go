package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// TestFloorsAnswerAlike sends two requests on one connection to each
// --refuse mode: every floor answer each with admit's refusal, the same
// status, header fields (but for the date) and body, so that the benchmark
// compares one answer.
func TestFloorsAnswerAlike(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(refuseHTTP))
	defer srv.Close()
	addrs := []string{srv.Listener.Addr().String()}
	for _, parse := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() { _ = serveFixed(ln, parse) }()
		addrs = append(addrs, ln.Addr().String())
	}

	want := refusal.header.Clone()
	want.Set("Content-Length", "32")
	for _, addr := range addrs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		const req = "GET /l/x HTTP/1.1\r\nHost: x\r\nUser-Agent: test\r\n\r\n"
		if _, err := io.WriteString(c, req+req); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		for i := range 2 {
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("%s, answer %d: %v", addr, i, err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.Header.Get("Date") == "" {
				t.Errorf("%s, answer %d: no Date", addr, i)
			}
			resp.Header.Del("Date")
			if resp.StatusCode != http.StatusTooManyRequests || string(body) != refusal.body || !reflect.DeepEqual(resp.Header, want) {
				t.Errorf("%s, answer %d: %d %v %q, want 429 %v %q", addr, i, resp.StatusCode, resp.Header, body, want, refusal.body)
			}
		}
	}
}
