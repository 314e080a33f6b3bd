package grpcprobe

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// timeout bounds every wait.
const timeout = 60 * time.Second

// startAdmit builds admit from the main module and runs it with args on
// free loopback ports, and returns the address its proxy serves on. The
// process is killed when t ends.
func startAdmit(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "admit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/admit")
	build.Dir = filepath.Join("..", "..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	for _, kv := range os.Environ() { // the process's settings are its flags
		if len(kv) < 6 || kv[:6] != "ADMIT_" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "admit: serving" {
				addr <- line["addr"].(string)
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatal("admit exited before serving")
		}
		return a
	case <-time.After(timeout):
		t.Fatalf("admit did not serve within %v", timeout)
		return ""
	}
}

// TestHealthCheckOverH2C checks that grpc-go's health client, which speaks
// HTTP/2 without TLS as Kubernetes' gRPC probes do, gets SERVING from
// admit, past the health group's burst too (from the health cache).
func TestHealthCheckOverH2C(t *testing.T) {
	addr := startAdmit(t, "--demo", "--h2c")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	const burst = 20 // the health group's
	for i := range burst + 5 {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err != nil {
			t.Fatalf("check %d: %v", i+1, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("check %d: got %v, want SERVING", i+1, resp.GetStatus())
		}
	}
}
