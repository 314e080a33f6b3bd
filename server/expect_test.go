package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestExpectAnsweredOnce: admit reads a buffered route's body before it
// forwards the request, sending the client's 100 Continue itself, so it
// forwards the body it has with its length and without Expect: the client
// sees exactly one 100, under both engines, whether the body came with a
// length or chunked, and the upstream sees no Expect and the length.
func TestExpectAnsweredOnce(t *testing.T) {
	type seen struct {
		expect string
		length int64
		te     []string
		body   string
	}
	got := make(chan seen, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Get("Expect"), r.ContentLength, r.TransferEncoding, string(body)}
	}))
	defer up.Close()
	for _, engine := range []string{"admit", "net/http"} {
		r := start(t, "--upstream", up.URL, "--route", "webhook=POST /hooks/", "--http-engine", engine)
		addr := strings.TrimPrefix(r.url, "http://")
		for _, framing := range []struct{ head, body string }{
			{"Content-Length: 5", "hello"},
			{"Transfer-Encoding: chunked", "5\r\nhello\r\n0\r\n\r\n"},
		} {
			t.Run(engine+"/"+framing.head, func(t *testing.T) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(testTimeout))
				fmt.Fprintf(c, "POST /hooks/x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n%s\r\n\r\n", framing.head)
				br := bufio.NewReader(c)
				continues := 0
				for {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusContinue {
						if resp.StatusCode != http.StatusOK {
							t.Errorf("answer: got %d, want 200", resp.StatusCode)
						}
						break
					}
					if continues++; continues == 1 {
						io.WriteString(c, framing.body)
					}
				}
				if continues != 1 {
					t.Errorf("the client got %d 100 Continue, want 1", continues)
				}
				if s := <-got; s.expect != "" || s.length != 5 || s.te != nil || s.body != "hello" {
					t.Errorf("upstream saw Expect %q, length %d, Transfer-Encoding %q, body %q; want no Expect, 5, none, hello", s.expect, s.length, s.te, s.body)
				}
			})
		}
	}
}
