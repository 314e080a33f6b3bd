package server

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// rawExchange sends request on a new connection to addr and returns the
// bytes of the one answer it reads.
func rawExchange(t *testing.T, addr, request string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(c, &got)), &http.Request{Method: strings.Fields(request)[0]})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	return got.Bytes()
}

var dateField = regexp.MustCompile(`\r\nDate: [^\r]*\r\n`)

// TestRefusalAnswersAsNetHTTP: the refusals admit's engine writes whole
// (answer.Writer) are, byte for byte but for the Date, what net/http's
// server writes for the same handler through the header map, with and
// without the RateLimit fields, to a request that closes its connection,
// to HEAD, which the engine answers through the header map, and as a
// group's problem document with extra fields, which reflects nothing the
// request sent.
func TestRefusalAnswersAsNetHTTP(t *testing.T) {
	rec := newRecorder(t)
	shaped := writeConfig(t, `budgets:
  link:
    refusal_type: problem
    refusal_body: "{group} is busy: {outcome}, {status}, retry in {retry_after} s"
    refusal_headers: {Cache-Control: no-store, Link: "</help>; rel=help", X-Note: busy}
`)
	tests := []struct {
		name, request string
		flags         []string
	}{
		{"429", "GET /l/x HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"429 with RateLimit fields", "GET /l/x HTTP/1.1\r\nHost: x\r\n\r\n", []string{"--policy-headers"}},
		{"429, Connection: close", "GET /l/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", nil},
		{"429 to HEAD", "HEAD /l/x HTTP/1.1\r\nHost: x\r\n\r\n", nil},
		{"429 as a problem document with extra fields", "GET /l/%3Cscript%3Emarker-7f3a HTTP/1.1\r\nHost: x\r\nUser-Agent: <script>marker-7f3a\r\n\r\n",
			[]string{"--config", shaped}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--upstream", rec.url, "--route", "link=GET /l/{id}"}, tt.flags...)
			engine := strings.TrimPrefix(start(t, args...).url, "http://")
			s, err := newServer(context.Background(), serverConfig(t, args...), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			nethttp := httptest.NewServer(s.handler)
			defer nethttp.Close()
			answers := map[string][]byte{}
			for name, addr := range map[string]string{"engine": engine, "net/http": strings.TrimPrefix(nethttp.URL, "http://")} {
				for range 100 { // past the burst
					if a := rawExchange(t, addr, tt.request); bytes.HasPrefix(a, []byte("HTTP/1.1 429 ")) {
						answers[name] = dateField.ReplaceAll(a, []byte("\r\nDate: -\r\n"))
						break
					}
				}
			}
			if answers["engine"] == nil || !bytes.Equal(answers["engine"], answers["net/http"]) {
				t.Errorf("the engine wrote\n%q\nnet/http\n%q", answers["engine"], answers["net/http"])
			}
			if tt.flags != nil && tt.flags[0] == "--config" && !bytes.Contains(answers["engine"], []byte("Content-Type: application/problem+json\r\n")) {
				t.Errorf("the group's refusal is not its problem document:\n%q", answers["engine"])
			}
			// Nothing the client sent comes back.
			if bytes.Contains(answers["engine"], []byte("marker-7f3a")) || bytes.Contains(answers["engine"], []byte("<script>")) {
				t.Errorf("the refusal reflects the request:\n%q", answers["engine"])
			}
		})
	}
}
