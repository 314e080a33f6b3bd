package drain_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/admitgo/admit/server/internal/drain"
)

// TestGRPC waits for a gRPC server's calls in flight as long as the drain
// lasts, then cuts them: a health Watch, which streams until its client
// or the server ends it, is cut at the timeout, and Stop says so.
func TestGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	watch, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil { // the call is in flight
		t.Fatal(err)
	}
	if cut := drain.Stop(100*time.Millisecond, []drain.Server{drain.GRPC(srv)}); !cut {
		t.Error("a call in flight past the timeout: got not cut, want cut")
	}
	if _, err := watch.Recv(); err == nil {
		t.Error("the call in flight: still answered after the drain")
	}
	if cut := drain.Stop(time.Minute, []drain.Server{drain.GRPC(grpc.NewServer())}); cut {
		t.Error("a server with no call: got cut, want stopped at once")
	}
}
