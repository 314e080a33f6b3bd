package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/internal/pipelisten"
)

// TestTimeouts: a connection's first head, and a later one that stops
// coming, are cut ReadHeaderTimeout after they began, as net/http's server
// cuts them, and a connection left idle after an answer IdleTimeout after
// it, and the slack (see idleDeadline).
func TestTimeouts(t *testing.T) {
	const header, idle = 10 * time.Second, time.Minute
	tests := []struct {
		name, send string
		answers    int
		want       time.Duration
	}{
		{"slow head", "GET /a HTTP/1.1\r\nHost:", 0, header},
		{"idle", "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", 1, idle + idleSlack(idle)},
		{"nothing sent", "", 0, header},
		{"idle, then a slow head", "GET /a HTTP/1.1\r\nHost: x\r\n\r\nG", 1, header},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := pipelisten.New()
				s := &Server{HTTP: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
					ReadHeaderTimeout: header, IdleTimeout: idle}}
				served := make(chan error, 1)
				go func() { served <- s.Serve(ln) }()
				client := ln.Dial()
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
		// Nothing reads the connection before the watch: a deadline that
		// passes sooner ends the request when the watch starts, where
		// net/http's read, running from the start, would end it at the
		// deadline.
		{"a hold bound shorter than the wait for the watch", watchAfter / 2, watchAfter},
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
				ln := pipelisten.New()
				s := &Server{HTTP: &http.Server{Handler: h, ReadHeaderTimeout: header, IdleTimeout: idle}}
				served := make(chan error, 1)
				go func() { served <- s.Serve(ln) }()
				client := ln.Dial()
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

// TestIdleDeadlineStands: a connection that serves requests one after
// another moves its read deadline about once per slack, not once per
// request, and still closes no sooner than IdleTimeout after its last
// answer, and no later than the slack after that: with traffic shorter
// than the slack, and with traffic longer than it that has a watched
// request in its midst (the watch lifts the deadline and leaves one in the
// past, which the next wait must replace).
func TestIdleDeadlineStands(t *testing.T) {
	tests := []struct {
		name      string
		idle      time.Duration
		requests  int
		every     time.Duration
		waits     int // the request whose handler runs long enough to be watched; -1: none
		deadlines int64
	}{
		// The first head's header deadline, then one idle deadline.
		{"shorter than the slack", time.Minute, 30, watchAfter / 3, -1, 2},
		// 6 s of traffic under a 1 s slack: about 7, and 3 for the watch.
		{"longer than the slack", 8 * time.Second, 40, 150 * time.Millisecond, 20, 12},
		// The first head's header deadline (10 s) falls after the idle
		// one, by more than the slack: it must not stand.
		{"idle timeout shorter than the header's", 2 * time.Second, 1, 0, -1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := &countingListener{Listener: pipelisten.New()}
				s := &Server{HTTP: &http.Server{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/waits" {
						time.Sleep(3 * watchAfter)
					}
				}), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: tt.idle}}
				served := make(chan error, 1)
				go func() { served <- s.Serve(ln) }()
				client := ln.Listener.Dial()
				br := bufio.NewReader(client)
				var last time.Time
				for i := range tt.requests {
					path := "/a"
					if i == tt.waits {
						path = "/waits"
					}
					if _, err := io.WriteString(client, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
						t.Fatal(err)
					}
					if _, err := http.ReadResponse(br, nil); err != nil {
						t.Fatal(err)
					}
					last = time.Now()
					time.Sleep(tt.every)
				}
				if got := ln.deadlines.Load(); got > tt.deadlines {
					t.Errorf("%d requests set the read deadline %d times, want at most %d", tt.requests, got, tt.deadlines)
				}
				if _, err := br.ReadByte(); err != io.EOF {
					t.Errorf("read: %v, want EOF", err)
				}
				if got, slack := time.Since(last), idleSlack(tt.idle); got < tt.idle || got > tt.idle+slack {
					t.Errorf("closed %v after the last answer, want %v to %v", got, tt.idle, tt.idle+slack)
				}
				client.Close()
				s.Close()
				<-served
			})
		})
	}
}

// TestNoIdleTimeout: without an idle timeout a connection waits for its
// next head with no deadline, set once, not once per request, and a hold
// bound a watched handler set does not reach the next wait.
func TestNoIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := &countingListener{Listener: pipelisten.New()}
		s := &Server{HTTP: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/held" {
				_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(5 * time.Second))
				time.Sleep(3 * watchAfter) // watched, under the hold bound
			}
		}), ReadHeaderTimeout: 10 * time.Second}}
		served := make(chan error, 1)
		go func() { served <- s.Serve(ln) }()
		client := ln.Listener.Dial()
		br := bufio.NewReader(client)
		get := func(path string) {
			t.Helper()
			if _, err := io.WriteString(client, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			if _, err := http.ReadResponse(br, nil); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		for range 30 {
			get("/a")
			time.Sleep(watchAfter / 3)
		}
		// The first head's header deadline, then none.
		if got := ln.deadlines.Load(); got > 2 {
			t.Errorf("30 requests set the read deadline %d times, want at most 2", got)
		}
		get("/held")
		time.Sleep(10 * time.Second) // past the hold bound, and the header timeout
		get("/a")
		client.Close()
		s.Close()
		<-served
	})
}

// countingListener counts the read deadlines set on the connections it
// accepts.
type countingListener struct {
	*pipelisten.Listener
	deadlines atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, deadlines: &l.deadlines}, nil
}

type countingConn struct {
	net.Conn
	deadlines *atomic.Int64
}

func (c *countingConn) SetReadDeadline(t time.Time) error {
	c.deadlines.Add(1)
	return c.Conn.SetReadDeadline(t)
}

// servePipe serves h on a new in-memory connection in the test's bubble
// and returns the client's end and a function that stops the server.
func servePipe(h http.Handler) (net.Conn, func()) {
	ln := pipelisten.New()
	s := &Server{HTTP: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	client := ln.Dial()
	return client, func() {
		client.Close()
		s.Close()
		<-served
	}
}

// TestPipelinedAfterHold: a request read from the buffer behind one whose
// handler set a read deadline (a hold bound) is not held to it.
func TestPipelinedAfterHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan time.Duration, 1)
		client, stop := servePipe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			if r.URL.Path == "/held" {
				_ = http.NewResponseController(w).SetReadDeadline(start.Add(5 * time.Second))
				return
			}
			select {
			case <-r.Context().Done():
				ended <- time.Since(start)
			case <-time.After(time.Minute):
				ended <- 0
			}
		}))
		defer stop()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		if _, err := io.WriteString(client, "GET /held HTTP/1.1\r\nHost: x\r\n\r\nGET /waits HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if got := <-ended; got != 0 {
			t.Errorf("the pipelined request ended after %v, at the last request's deadline", got)
		}
	})
}

// TestHandedHeadKeepsDeadline: a head that outgrows the engine's buffer
// goes to net/http under the header deadline it began under, not a new
// one from the hand-over.
func TestHandedHeadKeepsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, stop := servePipe(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer stop()
		start := time.Now()
		if _, err := io.WriteString(client, "GET /a HTTP/1.1\r\nHost: x\r\nCookie: "); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second)
		if _, err := io.WriteString(client, strings.Repeat("c", bufferSize)); err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if _, err := client.Read(b[:]); err != io.EOF {
			t.Errorf("read: %v, want EOF", err)
		}
		if got := time.Since(start); got != 10*time.Second {
			t.Errorf("closed after %v, want the 10s of the head's first deadline", got)
		}
	})
}

// TestLongHeadAfterHeaderTimeout: a later head too long for the engine,
// arriving at once after the connection has lived longer than the header
// timeout, goes to net/http under a header deadline of its own, not the
// first head's, which has passed.
func TestLongHeadAfterHeaderTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, stop := servePipe(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer stop()
		br := bufio.NewReader(client)
		long := "GET /b HTTP/1.1\r\nHost: x\r\nCookie: " + strings.Repeat("c", bufferSize) + "\r\n\r\n"
		for i, raw := range []string{"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", long} {
			if i == 1 {
				time.Sleep(11 * time.Second) // past the first head's 10 s
			}
			go func() { _, _ = io.WriteString(client, raw) }()
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("request %d: %v", i+1, err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Errorf("request %d: status %d, want 200", i+1, resp.StatusCode)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
		}
	})
}

// TestWatchTimer: on a connection that serves short requests one after
// another, the timer stays armed; a connection left idle leaves it
// unarmed, holding no request, and a request long after the last stops it
// when it ends; and a request that waits is watched once it has run
// watchAfter, within twice that.
func TestWatchTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan time.Duration, 1)
		ln := pipelisten.New()
		s := &Server{HTTP: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/waits" {
				return
			}
			start := time.Now()
			<-r.Context().Done()
			ended <- time.Since(start)
		}), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}}
		served := make(chan error, 1)
		go func() { served <- s.Serve(ln) }()
		client := ln.Dial()
		br := bufio.NewReader(client)
		quick := func() {
			if _, err := io.WriteString(client, "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			if _, err := http.ReadResponse(br, nil); err != nil {
				t.Fatal(err)
			}
		}
		for range 7 {
			quick()
			time.Sleep(watchAfter / 3)
		}
		var c *conn
		s.mu.Lock()
		for c = range s.conns {
		}
		s.mu.Unlock()
		if !c.armed.Load() {
			t.Fatal("the timer is not armed while requests come")
		}
		time.Sleep(3 * watchAfter)
		synctest.Wait()
		if c.armed.Load() || c.seen.Load() != nil {
			t.Errorf("idle: armed %v, holding %p; want the timer unarmed, holding nothing", c.armed.Load(), c.seen.Load())
		}
		quick() // arms the timer, and stops it: the connection's requests are sparse
		synctest.Wait()
		if c.armed.Load() {
			t.Error("a request long after the last left the timer armed, to fire on an idle connection")
		}
		time.Sleep(watchAfter / 3)
		quick() // soon after: arms the timer and leaves it armed, for the request after it
		if !c.armed.Load() {
			t.Error("a request soon after the last stopped the timer")
		}
		time.Sleep(watchAfter / 2)
		if _, err := io.WriteString(client, "GET /waits HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		client.Close() // before the watch: the request learns it when the watch starts
		if got := <-ended; got < watchAfter || got > 2*watchAfter {
			t.Errorf("the waiting request's context ended after %v, want within %v to %v", got, watchAfter, 2*watchAfter)
		}
		s.Close()
		<-served
	})
}

// TestWriteDeadlines: a write deadline a handler sets bounds its own
// answer's writes, and neither the next request's answer nor, once the
// connection is handed over, net/http's: as net/http lifts it after every
// answer.
func TestWriteDeadlines(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		switch r.URL.Path {
		case "/sets":
			_ = rc.SetWriteDeadline(time.Now().Add(time.Second))
		case "/late":
			_ = rc.SetWriteDeadline(time.Now().Add(time.Second))
			time.Sleep(2 * time.Second)
		default:
			time.Sleep(2 * time.Second)
		}
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path)
	})
	tests := []struct {
		name string
		raw  []string // requests, each sent once the last is answered
		want []string // the answers' bodies; "" for none
	}{
		{"the next request's answer", []string{"GET /sets HTTP/1.1\r\nHost: x\r\n\r\n", "GET /after HTTP/1.1\r\nHost: x\r\n\r\n"},
			[]string{"GET /sets", "GET /after"}},
		{"net/http's answer", []string{"GET /sets HTTP/1.1\r\nHost: x\r\n\r\n", "POST /after HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb"},
			[]string{"GET /sets", "POST /after"}},
		{"its own answer", []string{"GET /late HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client, stop := servePipe(h)
				defer stop()
				br := bufio.NewReader(client)
				for i, raw := range tt.raw {
					go func() { _, _ = io.WriteString(client, raw) }()
					resp, err := http.ReadResponse(br, nil)
					got := ""
					if err == nil {
						b, _ := io.ReadAll(resp.Body)
						got = string(b)
					}
					if got != tt.want[i] {
						t.Errorf("answer %d: %q (%v), want %q", i, got, err, tt.want[i])
					}
				}
			})
		})
	}
}

// TestWriteDeadlineFromAnotherGoroutine: a write deadline set while the
// answer's write is blocked on a client that does not read ends that
// write, as it ends net/http's, and the failed write ends the request's
// context.
func TestWriteDeadlineFromAnotherGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type result struct {
			err    error
			ctxErr error
		}
		done := make(chan result, 1)
		client, stop := servePipe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			go func() {
				time.Sleep(time.Second)
				_ = rc.SetWriteDeadline(time.Now())
			}()
			var err error
			for err == nil {
				if _, err = w.Write(make([]byte, 64<<10)); err == nil {
					err = rc.Flush()
				}
			}
			done <- result{err, r.Context().Err()}
		}))
		defer stop()
		if _, err := io.WriteString(client, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		got := <-done // the client reads nothing
		if !isTimeout(got.err) {
			t.Errorf("the blocked write ended with %v, want its deadline", got.err)
		}
		if got.ctxErr == nil {
			t.Error("the request's context did not end with its failed write")
		}
	})
}
