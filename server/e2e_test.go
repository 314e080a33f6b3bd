package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/server/internal/demo"
)

// These tests build the binary and run it as a user would; the others run the
// server in-process.

// startupTimeout bounds how long a spawned process may take to serve.
const startupTimeout = 30 * time.Second

// build compiles the admit binary into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "admit")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/admit").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is a running admit process.
type proc struct {
	cmd     *exec.Cmd
	url     string // the proxy, as it logged it
	metrics string
	stdout  syncBuffer
	stderr  syncBuffer
	exited  chan struct{} // closed when the process has exited; then err is set
	err     error
}

// spawn starts bin with args on free loopback ports, logging JSON, and waits
// until it logs that it serves. The process is killed when t ends, if it is
// still running.
func spawn(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-format", "json"}, args...)
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	for _, kv := range os.Environ() { // the process's settings are its flags
		if !strings.HasPrefix(kv, "ADMIT_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(io.TeeReader(stderr, &p.stderr))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "admit: serving" {
				serving <- line
			}
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(bin), p.stderr.String())
		}
	})
	select {
	case line := <-serving:
		p.url = fmt.Sprintf("http://%s", line["addr"])
		p.metrics = fmt.Sprintf("http://%s", line["metrics_addr"])
	case <-p.exited:
		t.Fatalf("admit exited (%v) before serving:\n%s", p.err, p.stderr.String())
	case <-time.After(startupTimeout):
		t.Fatalf("admit did not serve within %v:\n%s", startupTimeout, p.stderr.String())
	}
	return p
}

// terminate sends SIGTERM and returns the exit error (nil for exit code 0).
func (p *proc) terminate(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(testTimeout):
		t.Fatalf("admit did not exit within %v of SIGTERM", testTimeout)
		return nil
	}
}

type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEndToEnd(t *testing.T) {
	p := spawn(t, build(t), "--demo")
	client := &http.Client{Timeout: testTimeout}
	defer client.CloseIdleConnections()

	// The demo prints what to try; the signed delivery it shows works.
	eventually(t, "the demo's instructions", func() bool { return strings.Contains(p.stdout.String(), "Stop with Ctrl-C") })
	out := p.stdout.String()
	if !strings.Contains(out, "for i in $(seq 22); do curl") {
		t.Errorf("the demo does not print a curl loop:\n%s", out)
	}
	sig := regexp.MustCompile(`X-Demo-Signature: (sha256=[0-9a-f]{64})`).FindStringSubmatch(out)
	if sig == nil {
		t.Fatalf("the demo does not print a signed delivery:\n%s", out)
	}
	req, _ := http.NewRequest("POST", p.url+"/hooks/demo", strings.NewReader(demo.Body))
	req.Header.Set(demo.SignatureHeader, sig[1])
	if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the printed delivery: got %v %v, want 200", resp, err)
	} else {
		resp.Body.Close()
	}

	// curl until 429.
	began, admitted := time.Now(), 0
	var limited *http.Response
	for limited == nil && admitted < 100 {
		resp, err := client.Get(p.url + "/l/demo")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			limited = resp
		default:
			t.Fatalf("GET /l/demo: got %d, want 200 or 429", resp.StatusCode)
		}
	}
	if limited == nil {
		t.Fatalf("no 429 after %d requests", admitted)
	}
	// One token a second refills while the loop runs.
	if most := 20 + int(time.Since(began)/time.Second); admitted < 20 || admitted > most {
		t.Errorf("admitted before the first 429: got %d, want 20 to %d", admitted, most)
	}
	checkRetryAfter(t, limited)

	resp, err := client.Get(p.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`admit_door_requests_total\{admit_door_group="link",admit_door_outcome="rate_limited"[^}]*\} 1\n`).Match(body) {
		t.Errorf("/metrics does not count the 429:\n%s", body)
	}

	client.CloseIdleConnections()
	if err := p.terminate(t); err != nil {
		t.Errorf("exit after SIGTERM: got %v, want exit status 0", err)
	}
	if !strings.Contains(p.stderr.String(), `"msg":"admit: stopped"`) {
		t.Errorf("no \"admit: stopped\" in the log:\n%s", p.stderr.String())
	}
}

// TestReplicasShareStore runs two processes on one shared store: link
// requests from one client spread over both are admitted one burst in all.
func TestReplicasShareStore(t *testing.T) {
	bin := build(t)
	// A link budget that does not refill during the test: 20 at once, then
	// one every 100 s.
	cfgFile := filepath.Join(t.TempDir(), "admit.yaml")
	if err := os.WriteFile(cfgFile, []byte("budgets:\n  link:\n    rate: 0.01\n    burst: 20\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"redis", func(t *testing.T) []string {
			return []string{"--store", testredis.URL(), "--store-prefix", testredis.Prefix(t)}
		}},
		{"redis, batch_script=on", func(t *testing.T) []string {
			return []string{"--store", withQuery(testredis.URL(), "batch_script=on"), "--store-prefix", testredis.Prefix(t)}
		}},
		{"postgres", func(t *testing.T) []string {
			db := testpg.New(t)
			return []string{"--store", testpg.URL(), "--store-table", db.Schema + ".admit_quota"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(appRoutes(upstreamApp(t).URL), append(tt.store(t), "--config", cfgFile)...)
			replicas := []*proc{spawn(t, bin, args...), spawn(t, bin, args...)}
			client := &http.Client{Timeout: testTimeout}
			defer client.CloseIdleConnections()
			got := map[int]int{}
			for i := range 40 {
				resp, err := client.Get(replicas[i%2].url + "/l/abc")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				got[resp.StatusCode]++
			}
			if got[http.StatusOK] != 20 || got[http.StatusTooManyRequests] != 20 {
				t.Errorf("answers to 40 requests over two replicas: got %v, want 20 of 200 and 20 of 429", got)
			}
			for _, p := range replicas {
				if err := p.terminate(t); err != nil {
					t.Errorf("exit after SIGTERM: got %v, want exit status 0", err)
				}
			}
		})
	}
}

// eventually polls cond every 10ms until it holds, and fails the test if it
// does not within testTimeout. It is only for what another process makes
// true, which no channel can signal.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testTimeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, testTimeout)
		}
	}
}

// withQuery returns raw with the query parameter kv added.
func withQuery(raw, kv string) string {
	if strings.Contains(raw, "?") {
		return raw + "&" + kv
	}
	return raw + "?" + kv
}
