package admit

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/internal/pipelisten"
)

// TestHoldTimeoutFreesSlowReaders pins every link slot with requests whose
// clients never read their large answers, as two addresses could. Without
// a hold bound they would hold the group for as long as they liked; with
// one, a third client is served once the bound has passed.
func TestHoldTimeoutFreesSlowReaders(t *testing.T) {
	const hold = 300 * time.Millisecond
	budget := DefaultBudgets()[GroupLink]
	budget.HoldTimeout = hold
	d, err := New(Config{Budgets: map[Group]Budget{GroupLink: budget}})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 8<<20)
	entered := make(chan struct{}, budget.Inflight)
	var attackers sync.WaitGroup // the slow readers' requests, until the door has settled them
	attackers.Add(budget.Inflight)
	door := d.Wrap(GroupLink, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/l/big" {
			entered <- struct{}{}
		}
		w.Write(big)
	}), nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		door.ServeHTTP(w, r)
		if r.URL.Path == "/l/big" {
			attackers.Done()
		}
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	// Two addresses, two requests each: the group's cap of 4.
	for i := range budget.Inflight {
		from := fmt.Sprintf("127.0.0.%d", 2+i/budget.PerClient)
		dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		c, err := dialer.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// Closed before srv.Close, which waits for the handlers.
		defer c.Close()
		// A request whose answer the client never reads.
		fmt.Fprintf(c, "GET /l/big HTTP/1.1\r\nHost: x\r\n\r\n")
		<-entered
	}

	victim := client("127.0.0.9")
	start := time.Now()
	first := 0
	for {
		resp, err := victim.Get(srv.URL + "/l/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if first == 0 {
			first = resp.StatusCode
		}
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Since(start) > hold+5*time.Second {
			t.Fatalf("the third client was still refused (%d) %v after the slow readers pinned the group", resp.StatusCode, time.Since(start))
		}
	}
	if first != http.StatusServiceUnavailable {
		t.Errorf("the third client's first request: got %d, want 503 while the slow readers hold the group", first)
	}
	if waited := time.Since(start); waited > hold+2*time.Second {
		t.Errorf("the third client was served after %v, want within the hold bound %v (and some slack)", waited, hold)
	}
	within(t, 5*time.Second, attackers.Wait) // each is cut at the bound, since none of them reads
	assertIdle(t, d.groups[GroupLink])
}

// TestHoldTimeoutKeepsConnectionsReusable checks that the write deadline the
// hold bound sets does not outlive the request: net/http lifts it after the
// answer, so a keep-alive connection's next request, on a route without a
// bound, is not cut by it.
func TestHoldTimeoutKeepsConnectionsReusable(t *testing.T) {
	budget := DefaultBudgets()[GroupLink]
	budget.HoldTimeout = 50 * time.Millisecond
	d, err := New(Config{Budgets: map[Group]Budget{GroupLink: budget}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/l/", d.Wrap(GroupLink, status(http.StatusOK), nil))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(4 * budget.HoldTimeout) // an unlimited route may take its time
		io.WriteString(w, "done")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for _, path := range []string{"/l/x", "/slow"} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s on the reused connection: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: got %d %q", path, resp.StatusCode, b)
		}
	}
}

// TestOverflowIsBounded checks that the overflow handler serving requests
// over budget reads no more body than the group's cap and runs at most the
// group cap at once; past that, requests are refused.
func TestOverflowIsBounded(t *testing.T) {
	budget := DefaultBudgets()[GroupHealth]
	budget.Burst, budget.SharedBurst, budget.MaxBodyBytes, budget.Inflight = 1, 1, 1024, 2
	d, err := New(Config{Budgets: map[Group]Budget{GroupHealth: budget}})
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	gate := make(chan struct{})
	var inside sync.WaitGroup
	overflow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		read.Add(n)
		if r.URL.Path == "/block" {
			inside.Done()
			<-gate
		}
		w.WriteHeader(http.StatusOK)
	})
	h := d.Wrap(GroupHealth, status(http.StatusOK), overflow)
	post := func(path string, size int) int {
		r := httptest.NewRequest("POST", path, strings.NewReader(strings.Repeat("x", size)))
		r.ContentLength = -1 // streamed: the door cannot refuse on the declared length
		r.RemoteAddr = "192.0.2.1:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := post("/", 0); code != http.StatusOK {
		t.Fatalf("first request: got %d, want 200 (admitted)", code)
	}
	// Over budget: the overflow handler reads the body, up to the cap.
	post("/", 1<<20)
	if got := read.Load(); got > budget.MaxBodyBytes {
		t.Errorf("the overflow handler read %d body bytes, want at most the cap %d", got, budget.MaxBodyBytes)
	}
	var wg sync.WaitGroup
	inside.Add(budget.Inflight)
	for range budget.Inflight {
		wg.Go(func() { post("/block", 0) })
	}
	inside.Wait()
	if code := post("/", 0); code != http.StatusServiceUnavailable {
		t.Errorf("with the overflow handler at the group's cap: got %d, want 503", code)
	}
	close(gate)
	wg.Wait()
	if code := post("/", 0); code != http.StatusOK {
		t.Errorf("after the overflow drained: got %d, want 200 from the overflow handler", code)
	}
	if got := outcomeCount(d.groups[GroupHealth], outcomeCached); got != int64(budget.Inflight)+2 {
		t.Errorf("cached: got %d, want %d", got, budget.Inflight+2)
	}
}

// within runs wait and fails the test if it has not returned after limit.
func within(t *testing.T, limit time.Duration, wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still waiting after %v", limit)
	}
}

// TestHoldTimeoutBoundsTheLastWrite: a short answer that the handler's
// writes only buffer goes out when the request ends, after the handler
// has returned; a client that reads none of it is still cut at the hold
// bound, not left holding the connection and its server goroutine.
func TestHoldTimeoutBoundsTheLastWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hold = time.Second
		budget := DefaultBudgets()[GroupLink]
		budget.HoldTimeout = hold
		d, err := New(Config{Budgets: map[Group]Budget{GroupLink: budget}})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: d.Wrap(GroupLink, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "short")
		}), nil)}
		ln := pipelisten.New()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		client := ln.Dial()
		go io.WriteString(client, "GET /l/a HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(2 * hold) // the client reads nothing
		synctest.Wait()
		client.SetReadDeadline(time.Now())
		if _, err := client.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Errorf("after twice the hold bound: %v; want the connection closed", err)
		}
		client.Close()
		srv.Close()
		<-served
	})
}
