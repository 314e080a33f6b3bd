package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/server/internal/config"
)

// testTimeout bounds every wait of a network test.
const testTimeout = 10 * time.Second

// running is a server started by start, on loopback ports.
type running struct {
	s       *server
	url     string // the proxy, http://127.0.0.1:port
	metrics string // the metrics listener, http://127.0.0.1:port
	client  *http.Client
	stop    func() error // drains the server and returns what serve returned
}

// start runs a server configured by args, as on the command line with an
// empty environment, on free loopback ports. The server stops when t ends.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	return startConfig(t, serverConfig(t, args...))
}

// testEngine names the environment variable that gives every server the
// tests start through serverConfig the --http-engine it holds, unless the
// test gives its own: scripts/test runs the server's suites once with
// net/http too.
const testEngine = "ADMIT_TEST_HTTP_ENGINE"

// serverConfig reads args as a command line on free loopback ports, with an empty
// environment (and the --http-engine of ADMIT_TEST_HTTP_ENGINE).
func serverConfig(t testing.TB, args ...string) config.Config {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...)
	if e := os.Getenv(testEngine); e != "" {
		args = append([]string{"--http-engine", e}, args...)
	}
	cfg, err := config.Parse(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// frozen returns a clock that always answers the same time.
func frozen() func() time.Time {
	t0 := time.Now()
	return func() time.Time { return t0 }
}

func startConfig(t testing.TB, cfg config.Config) *running {
	t.Helper()
	return startWith(t, cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// startWith is startConfig logging to log.
func startWith(t testing.TB, cfg config.Config, log *slog.Logger) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := newServer(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := s.listen(); err != nil {
		cancel()
		s.close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx) }()
	r := &running{
		s:       s,
		url:     s.baseURL(),
		metrics: "http://" + s.metricsLn.Addr().String(),
		client:  &http.Client{Timeout: testTimeout},
	}
	var once sync.Once
	var served error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case served = <-done:
			case <-time.After(testTimeout):
				served = fmt.Errorf("server did not stop within %v", testTimeout)
			}
		})
		return served
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("serve: got %v, want nil", err)
		}
		r.client.CloseIdleConnections()
		s.close()
	})
	return r
}

// do sends a request with an optional body and headers ("Name: value") and
// returns the answer with its body read.
func (r *running) do(t *testing.T, method, path, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp, string(b)
}

// answers sends n requests and fails unless each gets status want.
func (r *running) answers(t *testing.T, n int, want int, method, path, body string, headers ...string) {
	t.Helper()
	for i := range n {
		if resp, b := r.do(t, method, path, body, headers...); resp.StatusCode != want {
			t.Fatalf("%s %s #%d: got %d %q, want %d", method, path, i+1, resp.StatusCode, b, want)
		}
	}
}

// rejected sends one request and fails unless it gets 429 with a
// Retry-After of whole seconds, at least 1.
func (r *running) rejected(t *testing.T, method, path, body string, headers ...string) {
	t.Helper()
	resp, b := r.do(t, method, path, body, headers...)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s %s: got %d %q, want 429", method, path, resp.StatusCode, b)
	}
	checkRetryAfter(t, resp)
}

func checkRetryAfter(t *testing.T, resp *http.Response) {
	t.Helper()
	ra := resp.Header.Get("Retry-After")
	if n, err := strconv.Atoi(ra); err != nil || n < 1 {
		t.Errorf("Retry-After: got %q, want whole seconds, at least 1", ra)
	}
}

// count returns the value of admit_door_requests_total for group and outcome
// on the server's /metrics.
func (r *running) count(t *testing.T, group, outcome string) int {
	t.Helper()
	want := fmt.Sprintf(`admit_door_group=%q,admit_door_outcome=%q`, group, outcome)
	for _, line := range r.scrape(t, "admit_door_requests_total{") {
		if strings.Contains(line, want) {
			n, err := strconv.Atoi(line[strings.LastIndexByte(line, ' ')+1:])
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("/metrics has no admit_door_requests_total with %s", want)
	return 0
}

// scrapeCount returns the sum of the values of the /metrics lines that
// start with prefix; 0 when there is none.
func (r *running) scrapeCount(t *testing.T, prefix string) int {
	t.Helper()
	total := 0
	for _, line := range r.scrape(t, prefix) {
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += int(n)
	}
	return total
}

// scrape returns the lines of /metrics that start with prefix.
func (r *running) scrape(t *testing.T, prefix string) []string {
	t.Helper()
	resp, err := r.client.Get(r.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: got %d, want 200", resp.StatusCode)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			lines = append(lines, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// upstreamApp is a test upstream. Webhook deliveries (POST /hooks/...) need the
// header X-Signature: good, or get 401; GET /echo answers with the request's
// forwarding headers, one "Name: value" line each; everything else gets 200
// with the path.
func upstreamApp(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Signature") != "good" {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "delivered\n")
	})
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) {
		for _, name := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "X-Real-Ip",
			"True-Client-Ip", "X-Forwarded-Ssl", "X-Forwarded-Port", "Client-Ip"} {
			for _, v := range r.Header.Values(name) {
				fmt.Fprintf(w, "%s: %s\n", name, v)
			}
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// parse reads args as config.Parse does, with an environment of env over
// ADMIT_UPSTREAM set to an app's address.
func parse(t *testing.T, args []string, env map[string]string) (config.Config, error) {
	t.Helper()
	full := map[string]string{"ADMIT_UPSTREAM": "http://app.internal:3000"}
	for k, v := range env {
		full[k] = v
	}
	return config.Parse(args, func(k string) string { return full[k] }, io.Discard)
}

// The helpers every front's tests share (package testserver).
var (
	hostAnswer  = testserver.HostAnswer
	metricValue = testserver.MetricValue
	dialFrom    = testserver.DialFrom
)
