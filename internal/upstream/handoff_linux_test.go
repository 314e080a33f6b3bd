package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTransportHandOff: the Transport puts a connection back, and hands it
// to a request that waits for one, before its reader looks at the bytes
// it holds past the answer. The attacker's trace holds the reader there
// until the victim's request has been written on the connection or
// RoundTrip waits for the reader; the victim still gets its own answer.
func TestTransportHandOff(t *testing.T) {
	u := newScripted(t, schedule{method: "GET", answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", stray: evil, when: atOnce})
	c := Transport()
	c.MaxConnsPerHost = 1 // the victim waits for the attacker's connection
	t.Cleanup(c.CloseIdleConnections)

	waiting, wrote, settling := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var waitingOnce, wroteOnce, settlingOnce sync.Once
	testHookSettling = func(bool) { settlingOnce.Do(func() { close(settling) }) }
	t.Cleanup(func() { testHookSettling = nil })

	req, _ := http.NewRequest("GET", u.url().String()+"/a", nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		PutIdleConn: func(error) {
			select {
			case <-wrote:
			case <-settling:
			}
		},
	}))
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		body string
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", u.url().String()+"/v/0", nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GetConn:      func(string) { waitingOnce.Do(func() { close(waiting) }) },
			WroteRequest: func(httptrace.WroteRequestInfo) { wroteOnce.Do(func() { close(wrote) }) },
		}))
		resp, err := c.RoundTrip(req)
		if err != nil {
			got <- answer{code: http.StatusBadGateway}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, string(b)}
	}()
	<-waiting
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if a := <-got; a.code != http.StatusOK || a.body != "victim 0" {
		t.Fatalf("victim got %d %q, want 200 %q", a.code, a.body, "victim 0")
	}
}

// TestTransportHandOffUnfit: after an answer with no body the Transport
// puts the connection back, and may hand it to a waiting request, before
// RoundTrip has the answer and drops the connection as unfit. The
// attacker's RoundTrip is held there until the victim has its answer or
// waits for the attacker's RoundTrip; the victim gets its own answer, on
// another connection.
func TestTransportHandOffUnfit(t *testing.T) {
	for _, answer := range []string{
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 41\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		t.Run(strings.Fields(answer)[1], func(t *testing.T) {
			u := newScripted(t, schedule{method: "GET", answer: answer, stray: evil, when: onNext})
			c := Transport()
			c.MaxConnsPerHost = 1 // the victim waits for the attacker's connection
			t.Cleanup(c.CloseIdleConnections)

			type answer struct {
				code int
				body string
			}
			got, held := make(chan answer, 1), make(chan struct{})
			var answered atomic.Bool
			var heldOnce sync.Once
			victim := func() {
				req, _ := http.NewRequest("GET", u.url().String()+"/v/0", nil)
				resp, err := c.RoundTrip(req)
				if err != nil {
					got <- answer{code: http.StatusBadGateway}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				got <- answer{resp.StatusCode, string(b)}
			}
			var a answer
			testHookAnswered = func() {
				if answered.Swap(true) {
					return // the victim's
				}
				go victim()
				select {
				case a = <-got:
				case <-held:
				}
			}
			testHookSettling = func(h bool) {
				if h {
					heldOnce.Do(func() { close(held) })
				}
			}
			t.Cleanup(func() { testHookAnswered, testHookSettling = nil, nil })

			req, _ := http.NewRequest("GET", u.url().String()+"/a", nil)
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if a.code == 0 {
				a = <-got
			}
			if a.code != http.StatusOK || a.body != "victim 0" {
				t.Fatalf("victim got %d %q, want 200 %q", a.code, a.body, "victim 0")
			}
			if at, v := u.served("/v/0"); at == v {
				t.Fatalf("the victim was sent on the attacker's connection")
			}
		})
	}
}

// TestTransportHandOffWaitEnds: a request that waits for the RoundTrip
// before it to be done with the connection stops waiting when its own
// context ends, while that RoundTrip is held.
func TestTransportHandOffWaitEnds(t *testing.T) {
	u := newScripted(t, schedule{method: "GET", answer: "HTTP/1.1 304 Not Modified\r\nContent-Length: 41\r\n\r\n", stray: evil, when: onNext})
	c := Transport()
	c.MaxConnsPerHost = 1
	t.Cleanup(c.CloseIdleConnections)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var answered atomic.Bool
	testHookSettling = func(held bool) {
		if held {
			cancel()
		}
	}
	testHookAnswered = func() {
		if answered.Swap(true) {
			return // the victim's
		}
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", u.url().String()+"/v/0", nil)
			resp, err := c.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("the victim got %v, want %v", err, context.Canceled)
		}
	}
	t.Cleanup(func() { testHookAnswered, testHookSettling = nil, nil })

	req, _ := http.NewRequest("GET", u.url().String()+"/a", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}
