package reference

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admitgo/admit/rls/internal/redisproc"
)

// version is the envoyproxy/ratelimit the answers are compared with.
const version = "v1.4.1-0.20260122083618-3fb702589d36"

// binary is the reference's command, built once per test binary.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rls-reference-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		// go install pkg@version builds the reference with its own go.mod,
		// as its users build it, not with this module's dependencies.
		cmd := exec.Command("go", "install", "github.com/envoyproxy/ratelimit/src/service_cmd@"+version)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building envoyproxy/ratelimit %s: %v\n%s", version, err, out)
			return 1
		}
		binary = filepath.Join(dir, "service_cmd")
		return m.Run()
	}()
	os.Exit(code)
}

// reference is a running envoyproxy/ratelimit.
type reference struct {
	addr   string
	client pb.RateLimitServiceClient
}

// startReference runs the reference on redis with the configuration in
// testdata and the extra environment env, and waits until its gRPC health
// check answers SERVING. It is stopped when t ends.
func startReference(t testing.TB, redis *redisproc.Server, env ...string) *reference {
	t.Helper()
	root, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	grpcPort := redisproc.FreePort(t)
	cmd := exec.Command(binary)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOST=127.0.0.1", "PORT=" + strconv.Itoa(redisproc.FreePort(t)),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=" + strconv.Itoa(redisproc.FreePort(t)),
		"GRPC_HOST=127.0.0.1", "GRPC_PORT=" + strconv.Itoa(grpcPort),
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redis.Addr,
		"RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"RUNTIME_IGNOREDOTFILES=true", "USE_STATSD=false", "LOG_LEVEL=error",
	}, env...)
	// Its log (debug lines of its stats sink whatever LOG_LEVEL says) is
	// left out; a reference that fails shows in its health check.
	if err := cmd.Start(); err != nil {
		t.Fatalf("start reference: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// WaitForReady holds the call until the listener accepts, so no
	// polling is needed.
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("reference not serving: %v %v", h, err)
	}
	return &reference{addr: "127.0.0.1:" + strconv.Itoa(grpcPort), client: pb.NewRateLimitServiceClient(conn)}
}
