//go:build linux

package upstream

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// evil is an answer an attacker writes where the upstream sends a body no
// client reads (a page of their own, served to HEAD): if the proxy reads
// it from a connection it reuses, another client's request gets it.
const evil = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL"

// strayWhen is when a scripted upstream sends the bytes it writes past an
// answer's framing.
type strayWhen int

const (
	atOnce    strayWhen = iota // in the same write as the answer
	whileIdle                  // once the proxy is done with the answer, before the next request
	onNext                     // when the next request comes on the same connection, before its answer
)

func (w strayWhen) String() string { return [...]string{"at once", "while idle", "on next"}[w] }

// schedule is what a scripted upstream does with the attacker's request:
// the answer it writes, and the bytes past its framing, when.
type schedule struct {
	method string // the attacker's request, with body when it is not empty
	body   string
	answer string
	stray  string // "": none
	when   strayWhen
	early  bool // answer before reading the request's body
}

// scripted is an upstream on loopback that answers the attacker's request
// (any path but /v/N) as its schedule says, and a victim's (/v/N) with
// "victim N", and notes which connection served each.
type scripted struct {
	ln   net.Listener
	s    schedule
	idle chan struct{} // the test says the attacker's answer is over
	sent chan struct{} // the upstream wrote the stray bytes (whileIdle)
	gone chan struct{} // the proxy closed the attacker's connection
	done chan struct{} // the test is over

	mu       sync.Mutex // guards the following fields
	conns    int
	attacker int            // the attacker's connection, from 1; 0: none yet
	victims  map[string]int // victim's path -> its connection
	open     []net.Conn
}

func newScripted(t *testing.T, s schedule) *scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &scripted{ln: ln, s: s, idle: make(chan struct{}), sent: make(chan struct{}, 1),
		gone: make(chan struct{}), done: make(chan struct{}), victims: map[string]int{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns++
			id := u.conns
			u.open = append(u.open, c)
			u.mu.Unlock()
			wg.Go(func() { u.serve(c, id) })
		}
	})
	t.Cleanup(func() {
		close(u.done)
		ln.Close()
		u.mu.Lock()
		for _, c := range u.open {
			c.Close()
		}
		u.mu.Unlock()
		wg.Wait()
	})
	return u
}

func (u *scripted) url() *url.URL { return &url.URL{Scheme: "http", Host: u.ln.Addr().String()} }

func (u *scripted) serve(c net.Conn, id int) {
	defer c.Close()
	br := bufio.NewReader(c)
	attacker, pending := false, ""
	defer func() {
		if attacker {
			close(u.gone)
		}
	}()
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if pending != "" {
			if _, err := io.WriteString(c, pending); err != nil {
				return
			}
			pending = ""
		}
		if n, ok := strings.CutPrefix(r.URL.Path, "/v/"); ok {
			_, _ = io.Copy(io.Discard, r.Body)
			u.mu.Lock()
			u.victims[r.URL.Path] = id
			u.mu.Unlock()
			body := "victim " + n
			if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
				return
			}
			continue
		}
		if attacker {
			return // one attacker's request per connection
		}
		attacker = true
		u.mu.Lock()
		u.attacker = id
		u.mu.Unlock()
		if !u.s.early {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		out := u.s.answer
		if u.s.when == atOnce {
			out += u.s.stray
		}
		if _, err := io.WriteString(c, out); err != nil {
			return
		}
		if u.s.early {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		switch {
		case u.s.stray == "":
		case u.s.when == whileIdle:
			select {
			case <-u.idle:
			case <-u.done:
				return
			}
			_, _ = io.WriteString(c, u.s.stray)
			u.sent <- struct{}{}
		case u.s.when == onNext:
			pending = u.s.stray
		}
	}
}

// served returns the connections that served the attacker and the victim
// at path.
func (u *scripted) served(path string) (attacker, victim int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.attacker, u.victims[path]
}

// proxyPath is one of the two ways admit forwards: start returns a
// function that sends a request through it to u and returns the status
// and body the client got (502 and "" when forwarding failed), and one
// that waits until the stray bytes u sent to an idle connection have
// reached the proxy.
type proxyPath struct {
	name  string
	start func(t *testing.T, u *scripted) (send func(method, path, body string) (int, string), arrived func())
}

var proxyPaths = []proxyPath{
	{"direct", func(t *testing.T, u *scripted) (func(method, path, body string) (int, string), func()) {
		front, d := directProxy(t, u.url())
		client := &http.Client{Timeout: testTimeout, Transport: &http.Transport{DisableCompression: true}}
		t.Cleanup(client.CloseIdleConnections)
		send := func(method, path, body string) (int, string) {
			return roundTrip(t, client, method, front.URL+path, body)
		}
		// The direct path reads no idle connection; the bytes have
		// arrived once its idle connections are readable.
		return send, func() { waitReadable(t, d) }
	}},
	{"transport", func(t *testing.T, u *scripted) (func(method, path, body string) (int, string), func()) {
		c := Transport()
		t.Cleanup(c.CloseIdleConnections)
		client := &http.Client{Timeout: testTimeout, Transport: c}
		send := func(method, path, body string) (int, string) {
			return roundTrip(t, client, method, u.url().String()+path, body)
		}
		// The Transport reads every idle connection, and closes one that
		// sends what nobody asked for.
		return send, func() {
			select {
			case <-u.gone:
			case <-time.After(testTimeout):
				t.Fatal("the Transport kept a connection that sent bytes while idle")
			}
		}
	}},
}

// roundTrip sends a request with client and returns the status and body
// it got, or 502 and "" when it got no whole answer.
func roundTrip(t *testing.T, client *http.Client, method, url, body string) (int, string) {
	t.Helper()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rb)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return http.StatusBadGateway, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return http.StatusBadGateway, ""
	}
	return resp.StatusCode, string(b)
}

// run plays s through path: the attacker's request, then three victims'
// requests one after another. It fails the test when a victim gets
// anything but its own answer, or, when the attacker's connection had to
// be dropped, gets it on that connection.
func run(t *testing.T, path proxyPath, s schedule, drop bool) {
	t.Helper()
	u := newScripted(t, s)
	send, arrived := path.start(t, u)
	send(s.method, "/a", s.body)
	if s.when == whileIdle && s.stray != "" {
		u.idle <- struct{}{}
		<-u.sent
		arrived()
	}
	for i := range 3 {
		p := "/v/" + strconv.Itoa(i)
		code, got := send("GET", p, "")
		if want := "victim " + strconv.Itoa(i); code != http.StatusOK || got != want {
			t.Fatalf("%s: victim %d got %d %q, want 200 %q", path.name, i, code, got, want)
		}
		if a, v := u.served(p); drop && a == v {
			t.Fatalf("%s: victim %d was sent on the attacker's connection", path.name, i)
		}
	}
}

// schedules are the ways an upstream sends bytes past an answer's framing:
// each must leave every later client with its own answer.
var schedules = []struct {
	name string
	s    schedule
	drop bool // the attacker's connection must carry no other request
}{
	// A WSGI server sends the GET's body on HEAD, after the head.
	{"HEAD body at once", schedule{method: "HEAD", answer: "HTTP/1.1 200 OK\r\nContent-Length: 41\r\n\r\n", stray: evil, when: atOnce}, true},
	{"HEAD body while idle", schedule{method: "HEAD", answer: "HTTP/1.1 200 OK\r\nContent-Length: 41\r\n\r\n", stray: evil, when: whileIdle}, true},
	{"HEAD body on next", schedule{method: "HEAD", answer: "HTTP/1.1 200 OK\r\nContent-Length: 41\r\n\r\n", stray: evil, when: onNext}, true},
	{"HEAD chunked body on next", schedule{method: "HEAD", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", stray: "29\r\n" + evil + "\r\n0\r\n\r\n", when: onNext}, true},
	{"HEAD unframed on next", schedule{method: "HEAD", answer: "HTTP/1.1 200 OK\r\n\r\n", stray: evil, when: onNext}, true},
	// A 204 or 304 that frames a body, then sends it.
	{"204 length on next", schedule{method: "GET", answer: "HTTP/1.1 204 No Content\r\nContent-Length: 41\r\n\r\n", stray: evil, when: onNext}, true},
	{"304 length on next", schedule{method: "GET", answer: "HTTP/1.1 304 Not Modified\r\nContent-Length: 41\r\n\r\n", stray: evil, when: onNext}, true},
	{"304 chunked on next", schedule{method: "GET", answer: "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", stray: "29\r\n" + evil + "\r\n0\r\n\r\n", when: onNext}, true},
	{"204 chunked at once", schedule{method: "GET", answer: "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", stray: "29\r\n" + evil + "\r\n0\r\n\r\n", when: atOnce}, true},
	// Bytes past a Content-Length, or past the last chunk.
	{"past length at once", schedule{method: "GET", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", stray: evil, when: atOnce}, true},
	{"past length while idle", schedule{method: "GET", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", stray: evil, when: whileIdle}, true},
	{"past chunks at once", schedule{method: "GET", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", stray: evil, when: atOnce}, true},
	{"past 204 while idle", schedule{method: "GET", answer: "HTTP/1.1 204 No Content\r\n\r\n", stray: evil, when: whileIdle}, true},
	// More 1xx answers than any app sends: the last may be what another
	// request gets.
	{"six 1xx on next", schedule{method: "GET", answer: strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 6) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", stray: evil, when: onNext}, true},
	// An answer before the request's body was read: the upstream reads
	// the body after, and the connection is as good as any.
	{"early answer", schedule{method: "POST", body: "a=1", answer: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", early: true}, false},
	{"early answer, bytes while idle", schedule{method: "POST", body: "a=1", answer: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", stray: evil, when: whileIdle, early: true}, true},
	{"early answer, bytes at once", schedule{method: "POST", body: "a=1", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", stray: evil, when: atOnce, early: true}, true},
	// Nothing stray: the connection is reused.
	{"clean", schedule{method: "GET", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}, false},
	{"204 with length 0, bytes while idle", schedule{method: "GET", answer: "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", stray: evil, when: whileIdle}, true},
}

// TestStraysReachNoOtherClient plays each schedule through the direct path
// and through the Transport.
func TestStraysReachNoOtherClient(t *testing.T) {
	for _, path := range proxyPaths {
		for _, tt := range schedules {
			t.Run(path.name+"/"+tt.name, func(t *testing.T) {
				run(t, path, tt.s, tt.drop)
			})
		}
	}
}

// TestCleanAnswersReuse: after an answer that ends at its framing, the
// next request goes on the same connection, on both paths; dropping every
// connection would pass the other tests.
func TestCleanAnswersReuse(t *testing.T) {
	for _, path := range proxyPaths {
		for _, answer := range []string{
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			"HTTP/1.1 204 No Content\r\n\r\n",
			"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
			"HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n",
			strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 5) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		} {
			t.Run(path.name+"/"+strings.Fields(answer)[1], func(t *testing.T) {
				u := newScripted(t, schedule{method: "GET", answer: answer})
				send, _ := path.start(t, u)
				send("GET", "/a", "")
				if code, got := send("GET", "/v/0", ""); code != 200 || got != "victim 0" {
					t.Fatalf("got %d %q", code, got)
				}
				if a, v := u.served("/v/0"); a != v {
					t.Errorf("the next request went on connection %d, not the first's, %d", v, a)
				}
			})
		}
	}
}
