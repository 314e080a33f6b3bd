package server

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/grpchealth"

	"github.com/admitgo/admit"
)

func TestHealthOverBudget(t *testing.T) {
	burst := admit.DefaultBudgets()[admit.GroupHealth].Burst
	t.Run("healthz", func(t *testing.T) {
		r := start(t, "--demo")
		for i := range burst + 1 {
			if resp, body := r.do(t, "GET", "/healthz", ""); resp.StatusCode != http.StatusOK {
				t.Fatalf("probe %d: got %d %q, want 200", i+1, resp.StatusCode, body)
			}
		}
		if got := r.count(t, "health", "cached"); got != 1 {
			t.Errorf("cached: got %d, want 1", got)
		}
		if got := r.count(t, "health", "ok"); got != burst {
			t.Errorf("ok: got %d, want %d", got, burst)
		}
	})
	t.Run("gRPC health service", func(t *testing.T) {
		r := start(t, "--demo")
		client := grpchealth.NewClient(r.client, r.url)
		for i := range burst + 1 {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			resp, err := client.Check(ctx, &grpchealth.CheckRequest{})
			cancel()
			if err != nil {
				t.Fatalf("check %d: %v", i+1, err)
			}
			if resp.Status != grpchealth.StatusServing {
				t.Fatalf("check %d: got %v, want %v", i+1, resp.Status, grpchealth.StatusServing)
			}
		}
		if got := r.count(t, "health", "cached"); got != 1 {
			t.Errorf("cached: got %d, want 1", got)
		}
	})
}

// TestHealthProbesUpstreamOnce checks that probes over budget do not each
// reach the upstream: its health endpoint is probed at most once a second.
func TestHealthProbesUpstreamOnce(t *testing.T) {
	var hits atomic.Int64
	up := upstreamApp(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			hits.Add(1)
		}
	})
	cfg := serverConfig(t, append(appRoutes(up.URL), "--upstream-health", "/healthz")...)
	cfg.Now = frozen() // no refill: every probe past the burst is over budget
	r := startConfig(t, cfg)
	burst := admit.DefaultBudgets()[admit.GroupHealth].Burst
	start := time.Now()
	r.answers(t, burst+50, http.StatusOK, "GET", "/healthz", "")
	// burst probes are proxied; the 50 over budget are answered from the
	// cache, which asks the upstream once a second at most.
	want := int64(burst) + 1 + int64(time.Since(start)/time.Second)
	if got := hits.Load(); got > want || got < int64(burst)+1 {
		t.Errorf("upstream health requests: got %d, want %d to %d", got, burst+1, want)
	}
	if got := r.count(t, "health", "cached"); got != 50 {
		t.Errorf("cached: got %d, want 50", got)
	}
}

func TestDrain(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := upstreamApp(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.Write([]byte("finished"))
	})
	r := start(t, appRoutes(up.URL)...)
	addr := r.s.ln.Addr().String()

	type answer struct {
		status int
		body   string
	}
	inflight := make(chan answer, 1)
	go func() {
		resp, err := r.client.Get(r.url + "/slow")
		if err != nil {
			inflight <- answer{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b := make([]byte, 64)
		n, _ := resp.Body.Read(b)
		inflight <- answer{resp.StatusCode, string(b[:n])}
	}()
	select {
	case <-arrived:
	case <-time.After(testTimeout):
		t.Fatal("the request never reached the upstream")
	}

	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()

	// Health reports draining at once (on the metrics listener, which
	// stays up until the drain ends), then the proxy refuses connections.
	waitFor(t, "the drain to start", r.s.drainStarted)
	resp, err := http.Get(r.metrics + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("health while draining: got %d, want 503", resp.StatusCode)
	}
	waitFor(t, "the listener to close", r.s.listenerClosed)
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("a new connection was accepted during the drain")
	}
	select {
	case err := <-stopped:
		t.Fatalf("the server stopped (%v) with a request in flight", err)
	default:
	}

	close(release)
	if got := <-inflight; got != (answer{http.StatusOK, "finished"}) {
		t.Errorf("in-flight request: got %+v, want 200 \"finished\"", got)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("serve: got %v, want nil", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the server did not stop after the last request")
	}
}

// waitFor waits until c is closed, at most testTimeout.
func waitFor(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(testTimeout):
		t.Fatalf("waiting for %s: not within %v", what, testTimeout)
	}
}

// TestDrainDelay checks that health routes report draining while the
// listener still accepts, for load balancers that probe before they stop
// sending.
func TestDrainDelay(t *testing.T) {
	r := start(t, append(appRoutes(upstreamApp(t).URL), "--drain-delay", "3s")...)
	r.answers(t, 1, http.StatusOK, "GET", "/healthz", "")
	go r.stop()
	waitFor(t, "the drain to start", r.s.drainStarted)
	resp, body := r.do(t, "GET", "/healthz", "")
	if resp.StatusCode != http.StatusServiceUnavailable || body != "not_serving\n" {
		t.Errorf("health route while draining: got %d %q, want 503 %q", resp.StatusCode, body, "not_serving\n")
	}
	r.answers(t, 1, http.StatusOK, "GET", "/account", "")
}
