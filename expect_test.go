package admit

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/internal/pipelisten"
)

// TestExpectContinueStartsTheGrace: with "Expect: 100-continue" the client
// sends its body only once the server's 100 has reached it, which net/http
// sends when the handler first reads the body; so the body's grace and
// deadline count from then, not from admission. A handler that reads 8 s
// after admission sees a dripper cut 5 s later (the webhook group's grace),
// and the cut is counted as the client's failure.
func TestExpectContinueStartsTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader, mp := sdkReader()
		d, err := New(Config{MeterProvider: mp})
		if err != nil {
			t.Fatal(err)
		}
		cut := make(chan time.Duration, 1)
		h := d.Wrap(GroupWebhook, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(8 * time.Second) // busy before it reads
			start := time.Now()
			if _, err := io.ReadAll(r.Body); err != nil {
				cut <- time.Since(start)
				w.WriteHeader(http.StatusBadGateway)
			}
		}), nil)
		ln := pipelisten.New()
		srv := &http.Server{Handler: h}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		client := ln.Dial()
		defer client.Close()
		br := bufio.NewReader(client)
		if _, err := io.WriteString(client, "POST /hooks/x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, "100 Continue") {
			t.Fatalf("first answer: got %q, %v, want 100 Continue", line, err)
		}
		if _, err := br.ReadString('\n'); err != nil { // the 100's blank line
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(stop)
		wg.Go(func() {
			for range 999 {
				if _, err := io.WriteString(client, "x"); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond):
				}
			}
		})
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if took := <-cut; took < 5*time.Second || took > 5100*time.Millisecond {
			t.Errorf("body cut %v after the 100, want at the 5s grace", took)
		}
		if got := outcomes(t, collect(t, reader)["admit.door.requests"]); got["webhook/body_cut"] != 1 {
			t.Errorf("outcomes: got %v, want one body_cut", got)
		}
	})
}
