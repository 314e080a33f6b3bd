package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
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

// TestLoopServesAdmit sends a client's requests over the link budget on one
// connection to --loop: it proxies the first (the upstream's answer, with
// its length) and refuses the last with admit's refusal, as the admit
// command would.
func TestLoopServesAdmit(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "from the app")
	}))
	defer up.Close()
	h := admitHandler([]string{"--upstream", up.URL, "--route", "link=GET /l/{id}",
		"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _ = serveLoop(ln, h) }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const req = "GET /l/x HTTP/1.1\r\nHost: x\r\n\r\n"
	const n = 40 // beyond the link budget's burst of 20
	if _, err := io.WriteString(c, strings.Repeat(req, n)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	want := refusal.header.Clone()
	want.Set("Content-Length", "32")
	for i := range n {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Header.Del("Date")
		switch i {
		case 0:
			if resp.StatusCode != http.StatusOK || string(body) != "from the app" || resp.ContentLength != int64(len(body)) {
				t.Errorf("first answer: %d %q, length %d; want the app's 200", resp.StatusCode, body, resp.ContentLength)
			}
		case n - 1:
			if resp.StatusCode != http.StatusTooManyRequests || string(body) != refusal.body || !reflect.DeepEqual(resp.Header, want) {
				t.Errorf("last answer: %d %v %q, want 429 %v %q", resp.StatusCode, resp.Header, body, want, refusal.body)
			}
		}
	}
}
