package reference

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/rls/internal/redisproc"
)

// benchConns is how many HTTP/2 connections the callers share, as an Envoy
// with a few workers keeps to its rate limit cluster.
const benchConns = 4

// BenchmarkDecisions measures ShouldRateLimit over gRPC on loopback, the
// reference on its Redis beside admit on each store, in one run, with 32
// callers (16 per core) on 4 connections, each request one descriptor of
// one of 10,000 clients. go test's -count repeats each server's runs back
// to back, so alternate the rounds by running the command several times,
// then compare with benchstat:
//
//	for i in 1 2 3 4 5 6; do go test -run '^$' -bench Decisions -benchtime 2s .; done > bench.txt
//	benchstat -col /server bench.txt
func BenchmarkDecisions(b *testing.B) {
	srv := redisproc.Start(b)
	servers := map[string][]pb.RateLimitServiceClient{"reference": referenceClients(b, srv)}
	cfg, err := rls.Load("testdata/ratelimit/config")
	if err != nil {
		b.Fatal(err)
	}
	for name, c := range counters(b, srv, "admit-bench:") {
		s, err := rls.New(rls.Options{Config: cfg, Counter: c})
		if err != nil {
			b.Fatal(err)
		}
		servers["admit-"+name] = admitClients(b, s)
	}
	for _, name := range []string{"reference", "admit-memory", "admit-redis", "admit-postgres"} {
		b.Run("server="+name, func(b *testing.B) {
			decide(b, servers[name])
		})
	}
}

// decide runs the callers until b is done and reports decisions a second.
func decide(b *testing.B, clients []pb.RateLimitServiceClient) {
	var next atomic.Uint64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			c := clients[i%uint64(len(clients))]
			if _, err := c.ShouldRateLimit(context.Background(), benchRequest(i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

func benchRequest(i uint64) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: "other", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{
		{Key: "epoch", Value: "bench"},
		{Key: "remote_address", Value: "10.0." + strconv.FormatUint(i%10_000/256, 10) + "." + strconv.FormatUint(i%256, 10)},
	}}}}
}

// referenceClients starts the reference on srv and dials it benchConns
// times.
func referenceClients(b *testing.B, srv *redisproc.Server) []pb.RateLimitServiceClient {
	ref := startReference(b, srv, "CACHE_KEY_PREFIX=bench:")
	return dial(b, ref.addr)
}

// admitClients serves s on grpc-go's server on loopback, as admit rls
// does, and dials it benchConns times.
func admitClients(b *testing.B, s *rls.Service) []pb.RateLimitServiceClient {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(rls.ServerOptions()...)
	s.Register(gs)
	go gs.Serve(ln)
	b.Cleanup(gs.Stop)
	return dial(b, ln.Addr().String())
}

func dial(b *testing.B, addr string) []pb.RateLimitServiceClient {
	var out []pb.RateLimitServiceClient
	for range benchConns {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		out = append(out, pb.NewRateLimitServiceClient(conn))
	}
	return out
}
