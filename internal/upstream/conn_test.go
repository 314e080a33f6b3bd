package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// forward sends one request through d and returns what the client got: the
// status, or 502 when Forward failed.
func forward(t *testing.T, d *Direct, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	if err := d.Forward(w, r, nil); err != nil {
		w = httptest.NewRecorder()
		w.Code = http.StatusBadGateway
	}
	return w
}

func TestDirectReusesConnections(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		conns int // connections ten requests in a row take
	}{
		{"length", okAnswer, 1},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 1},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", 1},
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 10},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 10},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", 1},
		// Bytes after the answer answer no request: the connection
		// cannot be trusted with the next one.
		{"stray bytes", okAnswer + "HTTP/1.1 200 OK\r\n\r\n", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newRawUpstream(t, func(*http.Request) (string, bool) { return tt.raw, strings.Contains(tt.raw, "close") })
			d := Transport().Direct(up.url(), nil)
			defer d.pool.closeIdle()
			for range 10 {
				if w := forward(t, d, httptest.NewRequest("GET", "/x", nil)); w.Code >= 300 {
					t.Fatalf("got %d, want 2xx", w.Code)
				}
			}
			if got := up.accepted(); got != tt.conns {
				t.Errorf("upstream accepted %d connections, want %d", got, tt.conns)
			}
		})
	}
}

// TestDirectRetriesIdempotentAfterReset: when a reused connection fails
// before any answer, a GET goes again on a fresh one; a POST does not,
// since the upstream may have acted on it.
func TestDirectRetriesIdempotentAfterReset(t *testing.T) {
	for _, tt := range []struct {
		method string
		want   int
	}{{"GET", 200}, {"POST", 502}} {
		t.Run(tt.method, func(t *testing.T) {
			second := true
			up := newRawUpstream(t, func(*http.Request) (string, bool) {
				// Every other request is dropped unanswered: the first
				// request of each connection is answered, the second is not.
				second = !second
				if second {
					return "", true
				}
				return okAnswer, false
			})
			d := Transport().Direct(up.url(), nil)
			defer d.pool.closeIdle()
			if w := forward(t, d, httptest.NewRequest(tt.method, "/x", nil)); w.Code != 200 {
				t.Fatalf("first: got %d, want 200", w.Code)
			}
			if w := forward(t, d, httptest.NewRequest(tt.method, "/x", nil)); w.Code != tt.want {
				t.Errorf("second: got %d, want %d", w.Code, tt.want)
			}
		})
	}
}

// TestDirectClientGoneClosesUpstream: a client that goes away while the
// upstream thinks closes the upstream connection, and Forward returns.
func TestDirectClientGoneClosesUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed, asked := make(chan error, 1), make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			closed <- err
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			closed <- err
			return
		}
		close(asked)
		// Never answer; wait for the proxy to hang up.
		_, err = br.ReadByte()
		closed <- err
	}()
	d := Transport().Direct(&url.URL{Scheme: "http", Host: ln.Addr().String()}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest("GET", "/x", nil).WithContext(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Forward(httptest.NewRecorder(), r, nil) }()
	<-asked
	cancel()
	if err := <-done; err == nil {
		t.Error("Forward returned nil after the client went away")
	}
	if err := <-closed; err != io.EOF {
		t.Errorf("upstream read %v, want EOF", err)
	}
}
