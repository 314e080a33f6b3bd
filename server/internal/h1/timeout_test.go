package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener hands out the server ends of in-memory connections.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}
func (l *pipeListener) Close() error   { close(l.closed); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestTimeouts: a connection's first head, and a later one that stops
// coming, are cut ReadHeaderTimeout after they began, and a connection left
// idle after an answer IdleTimeout after it, as net/http's server cuts
// them.
func TestTimeouts(t *testing.T) {
	const header, idle = 10 * time.Second, time.Minute
	tests := []struct {
		name, send string
		answers    int
		want       time.Duration
	}{
		{"slow head", "GET /a HTTP/1.1\r\nHost:", 0, header},
		{"idle", "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", 1, idle},
		{"nothing sent", "", 0, header},
		{"idle, then a slow head", "GET /a HTTP/1.1\r\nHost: x\r\n\r\nG", 1, header},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
				s := &Server{HTTP: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
					ReadHeaderTimeout: header, IdleTimeout: idle}}
				served := make(chan error, 1)
				go func() { served <- s.Serve(ln) }()
				client, server := net.Pipe()
				ln.conns <- server
				start := time.Now()
				closed := make(chan time.Duration, 1)
				go func() {
					br := bufio.NewReader(client)
					for range tt.answers {
						resp, err := http.ReadResponse(br, nil)
						if err != nil {
							t.Errorf("answer: %v", err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
					}
					_, err := br.ReadByte()
					if err != io.EOF {
						t.Errorf("read: %v, want EOF", err)
					}
					closed <- time.Since(start)
				}()
				if _, err := io.WriteString(client, tt.send); err != nil {
					t.Fatal(err)
				}
				if got := <-closed; got != tt.want {
					t.Errorf("closed after %v, want %v", got, tt.want)
				}
				client.Close()
				s.Close()
				<-served
			})
		})
	}
}

// TestWatchedRequestDeadlines: a request that waits outlives the header
// and idle timeouts the engine read its head under, and ends at a read
// deadline its handler set, as under net/http's server.
func TestWatchedRequestDeadlines(t *testing.T) {
	const header, idle = 10 * time.Second, time.Minute
	tests := []struct {
		name  string
		hold  time.Duration // a read deadline the handler sets; 0: none
		ended time.Duration // when the request's context ends; 0: not within 3 minutes
	}{
		{"no deadline of its own", 0, 0},
		{"a hold bound", 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ended := make(chan time.Duration, 1)
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					start := time.Now()
					if tt.hold > 0 {
						_ = http.NewResponseController(w).SetReadDeadline(start.Add(tt.hold))
					}
					select {
					case <-r.Context().Done():
						ended <- time.Since(start)
					case <-time.After(3 * time.Minute):
						ended <- 0
					}
				})
				ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
				s := &Server{HTTP: &http.Server{Handler: h, ReadHeaderTimeout: header, IdleTimeout: idle}}
				served := make(chan error, 1)
				go func() { served <- s.Serve(ln) }()
				client, server := net.Pipe()
				ln.conns <- server
				go func() { _, _ = io.Copy(io.Discard, client) }()
				// The second request waits idle first: its head comes under
				// the idle timeout, its answer after it.
				for _, raw := range []string{"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"} {
					if _, err := io.WriteString(client, raw); err != nil {
						t.Fatal(err)
					}
					if got := <-ended; got != tt.ended {
						t.Errorf("%q: the context ended after %v, want %v (0: not at all)", raw, got, tt.ended)
					}
					if tt.hold > 0 {
						break // the ended request closed the connection
					}
				}
				client.Close()
				s.Close()
				<-served
			})
		})
	}
}
