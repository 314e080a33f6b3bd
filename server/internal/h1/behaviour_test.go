package h1

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// servedBy names what served a request: the engine or net/http.
func servedBy(w http.ResponseWriter) string {
	if _, ok := w.(*response); ok {
		return "engine"
	}
	return "net/http"
}

// dial opens a connection to addr with a deadline for the whole test.
func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// read reads the next answer and its body.
func read(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestHandsOver sends on one connection a request the engine takes, then
// ones it does not: each of those goes to net/http's server with the
// connection, which answers it, and every request after it, as its own,
// nothing of what the engine had read lost.
func TestHandsOver(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %q", servedBy(w), r.Method, r.URL.Path, body)
	}))
	tests := []struct {
		name string
		raw  []string // requests on one connection
		want []string
	}{
		{"body", []string{
			"GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
			"POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
			"GET /c HTTP/1.1\r\nHost: x\r\n\r\n",
		}, []string{`engine GET /a ""`, `net/http POST /b "abc"`, `net/http GET /c ""`}},
		{"chunked body pipelined", []string{
			"GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n",
		}, []string{`engine GET /a ""`, `net/http POST /b "abc"`, `net/http GET /c ""`}},
		{"long head", []string{
			"GET /a HTTP/1.1\r\nHost: x\r\nCookie: " + strings.Repeat("c", 5000) + "\r\n\r\n",
		}, []string{`net/http GET /a ""`}},
		{"http/1.0", []string{"GET /a HTTP/1.0\r\nHost: x\r\n\r\n"}, []string{`net/http GET /a ""`}},
		{"head cut short", []string{"GET /a HTTP/1.1\r\nHost: x\r\n"}, []string{"400"}},
		{"malformed", []string{"GET /a HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n"}, []string{"400"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dial(t, addr)
			for _, raw := range tt.raw {
				if _, err := io.WriteString(c, raw); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name == "head cut short" {
				c.(*net.TCPConn).CloseWrite()
			}
			for _, want := range tt.want {
				resp, body := read(t, br)
				got := body
				if resp.StatusCode != http.StatusOK {
					got = fmt.Sprint(resp.StatusCode)
				}
				if got != want {
					t.Errorf("got %d %q, want %s", resp.StatusCode, body, want)
				}
			}
		})
	}
}

// TestPipelined answers requests sent in one write, in order.
func TestPipelined(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", servedBy(w), r.URL.Path)
	}))
	c, br := dial(t, addr)
	var raw strings.Builder
	for i := range 50 {
		fmt.Fprintf(&raw, "GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
	}
	if _, err := io.WriteString(c, raw.String()); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, body := read(t, br); body != fmt.Sprintf("engine /%d", i) {
			t.Fatalf("answer %d: %q", i, body)
		}
	}
}

// TestWatchEndsRequest: a request that waits sees its context end when
// its client goes away.
func TestWatchEndsRequest(t *testing.T) {
	ended := make(chan error, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			ended <- context.Cause(r.Context())
		case <-time.After(10 * time.Second):
			ended <- nil
		}
	}))
	c, _ := dial(t, addr)
	if _, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-ended; err == nil {
		t.Fatal("the request's context did not end when its client went away")
	}
}

// TestWatchKeepsPipelinedByte: the byte a watch reads ahead, the start of
// a pipelined request, is the next head's first.
func TestWatchKeepsPipelinedByte(t *testing.T) {
	first := make(chan struct{})
	sent := make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			first <- struct{}{}
			<-sent
			watchNow(w) // it reads the next byte
			if err := r.Context().Err(); err != nil {
				t.Errorf("a pipelined byte ended the request: %v", err)
			}
		}
		fmt.Fprint(w, r.URL.Path)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-first
	if _, err := io.WriteString(c, "GET /second HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	close(sent)
	for _, want := range []string{"/first", "/second"} {
		if _, body := read(t, br); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// TestShutdown closes an idle connection at once, lets a request in
// progress finish with Connection: close, and returns when it has.
func TestShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		fmt.Fprint(w, "done")
	}))
	idle, idleBR := dial(t, addr)
	if _, err := io.WriteString(idle, "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	read(t, idleBR)
	busy, busyBR := dial(t, addr)
	if _, err := io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if _, err := idleBR.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection: %v, want EOF", err)
	}
	close(release)
	resp, body := read(t, busyBR)
	if body != "done" || !resp.Close {
		t.Errorf("the request in progress: %q, close %v; want done, closed", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener still accepts after Shutdown")
	}
}

// TestLateWrite: a write from a handler's goroutine after the handler
// returned fails and reaches neither that answer nor the next one.
func TestLateWrite(t *testing.T) {
	late := make(chan http.ResponseWriter, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			late <- w
		}
		fmt.Fprint(w, r.URL.Path)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, body := read(t, br); body != "/first" {
		t.Fatalf("first answer %q", body)
	}
	w := <-late
	if _, err := io.WriteString(w, "stale"); err == nil {
		t.Error("a write after the handler returned succeeded")
	}
	w.Header().Set("X-Stale", "1")
	w.WriteHeader(http.StatusTeapot)
	if _, err := io.WriteString(c, "GET /second HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, body := read(t, br)
	if body != "/second" || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Stale") != "" {
		t.Errorf("second answer %d %v %q", resp.StatusCode, resp.Header, body)
	}
}

// TestHandOverAfterWatch: the byte a watch read ahead reaches net/http
// when the request it begins is one the engine hands over.
func TestHandOverAfterWatch(t *testing.T) {
	waiting, sent := make(chan struct{}), make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			waiting <- struct{}{}
			<-sent
			watchNow(w) // it reads the next byte
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %q", servedBy(w), r.URL.Path, body)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-waiting
	if _, err := io.WriteString(c, "abc"); err != nil {
		t.Fatal(err)
	}
	close(sent)
	for _, want := range []string{`engine /slow ""`, `net/http /b "abc"`} {
		if _, body := read(t, br); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// TestBetweenRequests: a CRLF after a POST is skipped, as net/http's
// server skips it; HTTP/2's preface after a request ends the connection,
// where net/http would take it only at a connection's start.
func TestBetweenRequests(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", servedBy(w), r.Method, r.URL.Path)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "POST /a HTTP/1.1\r\nHost: x\r\n\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"+
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"engine POST /a", "engine GET /b"} {
		if _, body := read(t, br); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
	if b, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the preface: %q, %v; want the connection closed", b, err)
	}
}

// watchNow starts the watch of w's request at once, not after watchAfter,
// and waits until its read has returned; it returns at once when no watch
// starts.
func watchNow(w http.ResponseWriter) {
	rw := w.(*response)
	rw.watch()
	rw.wmu.Lock()
	watched := rw.watched
	rw.wmu.Unlock()
	if watched != nil {
		<-watched
	}
}

// TestTwoWatchesInARow: a request read from the buffer behind one whose
// watch read a byte ahead does not read another over it, as net/http's
// background read does not.
func TestTwoWatchesInARow(t *testing.T) {
	waiting, sent := make(chan struct{}), make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/1":
			waiting <- struct{}{}
			<-sent
			watchNow(w) // reads the first byte of /3
		case "/2":
			watchNow(w)
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-waiting
	if _, err := io.WriteString(c, "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	close(sent)
	for _, want := range []string{"GET /1", "GET /2", "GET /3"} {
		if _, body := read(t, br); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// TestPanics: a handler that panics before its answer's head is complete
// sends nothing of it, as under net/http's server, and a write its
// goroutine makes afterwards fails.
func TestPanics(t *testing.T) {
	late := make(chan http.ResponseWriter, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-A", "1")
		w.WriteHeader(http.StatusOK)
		late <- w
		panic(http.ErrAbortHandler)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(br); err != nil || len(b) > 0 {
		t.Errorf("the client got %q, %v; want nothing, then the end", b, err)
	}
	if _, err := io.WriteString(<-late, "stray"); err == nil {
		t.Error("a write after the handler panicked succeeded")
	}
}

// TestHandedCloseHalfCloses: when net/http's server closes a connection
// whose request body it left unread (too long to discard), it first
// half-closes it and waits, so that the client reads the answer and then
// the end of the stream, not a reset that can destroy the answer. A
// connection the engine handed over must let it, as net/http alone does.
func TestHandedCloseHalfCloses(t *testing.T) {
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	})
	_, engine := start(t, refuse)
	for _, addr := range []string{startHTTP(t, refuse), engine} {
		c, br := dial(t, addr)
		raw := "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + strings.Repeat("b", 16<<10)
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		if resp, _ := read(t, br); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: status %d", addr, resp.StatusCode)
		}
		if b, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: after the answer: %q, %v; want the end of the stream", addr, b, err)
		}
	}
}
