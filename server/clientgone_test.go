package server

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestClientGoneEndsUpstreamRequest: a client that goes away while its
// request waits on the upstream ends the upstream's request too, whichever
// engine serves the client: a plain request (admit's own) and one with a
// body (net/http's).
func TestClientGoneEndsUpstreamRequest(t *testing.T) {
	for _, raw := range []string{
		"GET /slow HTTP/1.1\r\nHost: app\r\n\r\n",
		"POST /slow HTTP/1.1\r\nHost: app\r\nContent-Length: 2\r\n\r\nhi",
	} {
		arrived, ended := make(chan struct{}, 1), make(chan struct{}, 1)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			arrived <- struct{}{}
			select {
			case <-r.Context().Done(): // admit closed the upstream connection
				ended <- struct{}{}
			case <-time.After(testTimeout):
			}
		}))
		r := startConfig(t, serverConfig(t, "--upstream", up.URL))
		c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		<-arrived
		c.Close()
		select {
		case <-ended:
		case <-time.After(testTimeout):
			t.Errorf("%q: the upstream's request outlived its client by %v", raw, testTimeout)
		}
		up.Close()
	}
}
