package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/admitgo/admit/server/internal/config"
)

// TestAuthAnswersAsNetHTTP: admit auth's answers, which admit's HTTP/1.1
// engine takes whole, are byte for byte what net/http's server writes from
// the header map, Date aside: admitted with rate-limit fields, the door's
// refusal (with a refusal field that sorts before Admit-Status), the same
// under --deny-status, and each refusal made before the door.
func TestAuthAnswersAsNetHTTP(t *testing.T) {
	shaped := writeConfig(t, `budgets:
  link:
    refusal_headers: {Access-Control-Allow-Origin: "*", X-Note: busy}
`)
	ask := func(headers ...string) string {
		return "GET /_admit HTTP/1.1\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n"
	}
	nginx := func(uri string) string { return ask(nginxAsks("GET", uri, "198.51.100.7")...) }
	tests := []struct {
		name    string
		flags   []string
		request string
		want    string // the answer's first line and a field it must hold
	}{
		{"admitted with RateLimit fields", []string{"--policy-headers"}, nginx("/l/x"), "HTTP/1.1 200 OK\r\nAdmit-Status: ok\r\n"},
		{"unlimited", nil, nginx("/u/x"), "Admit-Status: unlimited\r\n"},
		{"refused by the door", []string{"--config", shaped}, nginx("/l/x"), "HTTP/1.1 429 Too Many Requests\r\nAccess-Control-Allow-Origin: *\r\nAdmit-Status: rate_limited\r\n"},
		{"refused, --deny-status 403", []string{"--config", shaped, "--deny-status", "403"}, nginx("/l/x"), "HTTP/1.1 403 Forbidden\r\nAccess-Control-Allow-Origin: *\r\nAdmit-Status: rate_limited\r\nRatelimit: \"link\";r=0;t=1\r\nRatelimit-Policy: \"link\";q=20;w=20\r\nRetry-After: 1\r\nX-Note: busy\r\nDate: -\r\nContent-Length: 0\r\n\r\n"},
		{"a spelling the front would change", nil, nginx("/l//x"), "Admit-Status: malformed\r\n"},
		{"two families", nil, ask(append(nginxAsks("GET", "/l/x", "198.51.100.7"), "X-Forwarded-Method: GET")...), "HTTP/1.1 400 Bad Request\r\n"},
		{"two families, --deny-status 403", []string{"--deny-status", "403"}, ask(append(nginxAsks("GET", "/l/x", "198.51.100.7"), "X-Forwarded-Method: GET")...), "HTTP/1.1 403 Forbidden\r\nAdmit-Status: malformed\r\nDate: -\r\nContent-Length: 0\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--route", "link=GET /l/{id}", "--trusted-proxy", "127.0.0.1/32"}, tt.flags...)
			engine := strings.TrimPrefix(startAuth(t, args...).url, "http://")
			cfg, err := config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...), append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...), func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Now = frozen()
			s, err := newServer(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			nethttp := httptest.NewServer(s.handler)
			defer nethttp.Close()
			answers := map[string][]byte{}
			for name, addr := range map[string]string{"engine": engine, "net/http": strings.TrimPrefix(nethttp.URL, "http://")} {
				times := 30 // past the link group's burst
				if strings.HasPrefix(tt.want, "HTTP/1.1 200") {
					times = 1
				}
				for range times {
					answers[name] = dateField.ReplaceAll(rawExchange(t, addr, tt.request), []byte("\r\nDate: -\r\n"))
				}
			}
			if !bytes.Equal(answers["engine"], answers["net/http"]) {
				t.Errorf("the engine wrote\n%q\nnet/http\n%q", answers["engine"], answers["net/http"])
			}
			if !bytes.Contains(answers["engine"], []byte(tt.want)) {
				t.Errorf("the answer lacks %q:\n%q", tt.want, answers["engine"])
			}
			// The body is the proxy's, its length as told: nothing of
			// the recorder's space beyond it.
			head, body, _ := bytes.Cut(answers["engine"], []byte("\r\n\r\n"))
			if !bytes.Contains(append(head, "\r\n"...), []byte("\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n")) || bytes.IndexByte(body, 0) >= 0 {
				t.Errorf("the body, %d bytes, is not the one the head tells of:\n%q", len(body), answers["engine"])
			}
			if strings.Contains(tt.want, " 429 ") && !bytes.Equal(body, []byte("Too Many Requests: limit \"link\"\n")) {
				t.Errorf("the refusal's body is %q, want the proxy's", body)
			}
		})
	}
}

// TestInsertStatusField: Admit-Status goes where http.Header.Write puts
// it, whether fields have room for it or not.
func TestInsertStatusField(t *testing.T) {
	for _, tt := range []struct{ fields, want string }{
		{"", "Admit-Status: ok\r\n"},
		{"Accept-Ranges: none\r\n", "Accept-Ranges: none\r\nAdmit-Status: ok\r\n"},
		{"Retry-After: 1\r\n", "Admit-Status: ok\r\nRetry-After: 1\r\n"},
		{"A: 1\r\nB: 2\r\nC: 3\r\n", "A: 1\r\nAdmit-Status: ok\r\nB: 2\r\nC: 3\r\n"},
	} {
		for _, room := range []int{0, statusRoom} {
			fields := append(make([]byte, 0, len(tt.fields)+room), tt.fields...)
			if got := insertStatusField(fields, "ok"); string(got) != tt.want {
				t.Errorf("%q with room %d: got %q, want %q", tt.fields, room, got, tt.want)
			}
		}
	}
}

// FuzzWholeFields: the readers of whole fields end on any bytes, whole
// lines or not, and what insertStatusField adds is read back.
func FuzzWholeFields(f *testing.F) {
	f.Add([]byte("Retry-After: 1\r\nX-Note: busy\r\n"))
	f.Add([]byte("no line end"))
	f.Add([]byte("A: 1\r\nbroken"))
	f.Add([]byte("\n\n: \r\n"))
	f.Fuzz(func(t *testing.T, fields []byte) {
		dropFields(bytes.Clone(fields), "Content-Type")
		eachField(fields, func(string, string) {})
		got := insertStatusField(bytes.Clone(fields), "ok")
		var found bool
		eachField(got, func(name, value string) { found = found || name == admitStatus && value == "ok" })
		if !found {
			t.Errorf("%q: Admit-Status not read back from %q", fields, got)
		}
	})
}

// TestDeniedSharesNothing: --deny-status drops fields in place only from
// fields of the answer's own, never from the Admit-Status line answers
// share (the race detector watches the two goroutines).
func TestDeniedSharesNothing(t *testing.T) {
	a := &authFront{deny: 403}
	done := make(chan string)
	for range 2 {
		go func() { done <- string(a.denied(authAnswer{fields: (&authRecorder{}).fields("x")}).fields) }()
	}
	for range 2 {
		if got := <-done; got != "Admit-Status: x\r\n" {
			t.Errorf("got %q", got)
		}
	}
}
