package rls_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/admitgo/admit/rls"
)

// TestServers calls the service with grpc-go's client through both ways of
// serving it: Handler on net/http's cleartext HTTP/2, and Register on
// grpc-go's server. Both answer alike, refusals with INVALID_ARGUMENT, and
// both read a request of nearly MaxRequestBytes, under ServerOptions' fixed
// flow-control windows, and refuse a larger one undecoded.
func TestServers(t *testing.T) {
	var lc net.ListenConfig
	listen := func() net.Listener {
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	f := newFixture(t, rls.Options{})
	hln := listen()
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	mux := http.NewServeMux()
	mux.Handle(rls.Procedure, f.svc.Handler())
	hs := &http.Server{Handler: mux, Protocols: &protocols}
	go hs.Serve(hln)
	t.Cleanup(func() { hs.Close() })
	gln := listen()
	gs := grpc.NewServer(rls.ServerOptions()...)
	f.svc.Register(gs)
	go gs.Serve(gln)
	t.Cleanup(gs.Stop)
	for _, addr := range []string{hln.Addr().String(), gln.Addr().String()} {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		c := pb.NewRateLimitServiceClient(conn)
		var got []pb.RateLimitResponse_Code
		for range 3 {
			resp, err := c.ShouldRateLimit(context.Background(), req("edge", desc("user", addr)))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, resp.GetOverallCode())
		}
		if got[0] != pb.RateLimitResponse_OK || got[1] != pb.RateLimitResponse_OK || got[2] != pb.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("%s: codes %v, want OK, OK, OVER_LIMIT", addr, got)
		}
		if _, err := c.ShouldRateLimit(context.Background(), req("edge")); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%s: no descriptors: got %v, want InvalidArgument", addr, err)
		}
		// A value past MaxValueBytes is refused once decoded; one
		// descriptor's encoding adds a few bytes to the value.
		near := strings.Repeat("v", rls.MaxRequestBytes-64)
		if _, err := c.ShouldRateLimit(context.Background(), req("edge", desc("user", near))); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%s: a request just under MaxRequestBytes: got %v, want InvalidArgument", addr, err)
		}
		if addr == gln.Addr().String() {
			// Metadata past MaxHeaderBytes is refused before any handler
			// runs; within it, the call is answered.
			big := metadata.AppendToOutgoingContext(context.Background(), "x-pad", strings.Repeat("p", rls.MaxHeaderBytes))
			if _, err := c.ShouldRateLimit(big, req("edge", desc("user", "pad"))); status.Code(err) == codes.OK {
				t.Fatalf("%s: metadata over MaxHeaderBytes: answered, want it refused", addr)
			}
			small := metadata.AppendToOutgoingContext(context.Background(), "x-pad", strings.Repeat("p", 1<<10))
			if _, err := c.ShouldRateLimit(small, req("edge", desc("user", "pad"))); err != nil {
				t.Fatalf("%s: 1 KiB of metadata: %v", addr, err)
			}
		}
		over := strings.Repeat("v", rls.MaxRequestBytes)
		if _, err := c.ShouldRateLimit(context.Background(), req("edge", desc("user", over))); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("%s: a request over MaxRequestBytes: got %v, want ResourceExhausted", addr, err)
		}
	}
}
