package upstream

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
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
	testHookSettling = func() { settlingOnce.Do(func() { close(settling) }) }
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
