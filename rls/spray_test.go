package rls_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/rls"
)

// TestSprayKeepsSpent sprays ten times a memory counter's bound of
// distinct user values over gRPC: the user over its limit before the
// spray is still over after it, a fresh user's first calls pass, and the
// counter keeps no more than its bound.
func TestSprayKeepsSpent(t *testing.T) {
	const bound = 50
	clock := testclock.New(time.Unix(1_699_999_990, 0))
	c, err := memquota.NewCounter(memquota.CounterConfig{MaxCounters: bound, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, clock, rls.Options{Counter: c})
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(rls.ServerOptions()...)
	f.svc.Register(gs)
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := pb.NewRateLimitServiceClient(conn)
	code := func(user string) pb.RateLimitResponse_Code {
		t.Helper()
		resp, err := client.ShouldRateLimit(context.Background(), req("edge", desc("user", user)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetOverallCode()
	}

	for range 3 { // the limit is 2 a minute
		code("spent")
	}
	for i := range 10 * bound {
		code(fmt.Sprint("spray", i))
	}
	if c.Len() > bound {
		t.Errorf("counters after the spray: got %d, want at most %d", c.Len(), bound)
	}
	if got := code("spent"); got != pb.RateLimitResponse_OVER_LIMIT {
		t.Errorf("the spent user after the spray: got %v, want OVER_LIMIT", got)
	}
	for i := range 2 {
		if got := code("fresh"); got != pb.RateLimitResponse_OK {
			t.Errorf("the fresh user's call %d: got %v, want OK", i+1, got)
		}
	}
}
