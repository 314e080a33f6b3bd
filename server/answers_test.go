package server

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testrouter"
)

// TestHeadBodyReachesNoOtherClient puts admit in front of a WSGI app on
// Python's wsgiref, which sends the GET's body on HEAD, after the head,
// once the next request comes on the connection. An attacker's HEAD of a
// page they wrote, over admit's direct path and over net/http's
// Transport, then other clients' requests over both: none is answered
// from the page.
func TestHeadBodyReachesNoOtherClient(t *testing.T) {
	up := testrouter.Start(t, testrouter.WSGIRef)
	r := start(t, "--upstream", up.URL)
	addr := strings.TrimPrefix(r.url, "http://")
	big := strings.Repeat("x", 40<<10) // over the direct path's bound: the Transport's
	heads := []string{
		"HEAD /page/1 HTTP/1.1\r\nHost: a\r\n\r\n",
		// Expect sends the request through the Transport.
		"HEAD /page/1 HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	}
	for round, head := range heads {
		if status := rawHead(t, "127.0.0.9", addr, head); status != http.StatusOK {
			t.Fatalf("round %d: HEAD answered %d, want 200", round, status)
		}
		for i := range 4 {
			from := fmt.Sprintf("127.0.%d.%d", round+1, i+1)
			path := fmt.Sprintf("/u/%d-%d", round, i)
			req, want := "GET "+path+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "unlimited "+path+"\n"
			if i%2 == 1 {
				req = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", path, len(big), big)
				want = "method not allowed\n"
			}
			if a := rawFrom(t, from, addr, req); a.body != want {
				t.Errorf("round %d: %s %s from %s got %d %q, want %q", round, req[:4], path, from, a.status, a.body, want)
			}
		}
	}
}

// rawHead sends a HEAD request's bytes on a new connection from local
// address from to addr and returns the final answer's status.
func rawHead(t *testing.T, from, addr, request string) int {
	t.Helper()
	c := dialFrom(t, from, addr)
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
		if err != nil {
			t.Fatalf("%q: reading the answer: %v", firstLine(request), err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 200 {
			return resp.StatusCode
		}
	}
}
