package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"sync"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/admitgo/admit/server/internal/drain"
	"github.com/admitgo/admit/server/internal/grpcserver"
)

// grpcServing is admit auth's gRPC server on --grpc-listen while serve
// runs: Envoy's ext_authz Check, the gRPC health service and server
// reflection, on the options admit rls serves with. Its zero value, without
// --grpc-listen, does nothing.
type grpcServing struct {
	srv    *grpc.Server
	health *health.Server
	ln     string // the address it serves on
}

// serveGRPC serves --grpc-listen's listener until stop, sending a failure
// to failed; nothing without --grpc-listen.
func (s *server) serveGRPC(wg *sync.WaitGroup, failed chan<- error) grpcServing {
	if s.grpcLn == nil {
		return grpcServing{}
	}
	var tlsConfig *tls.Config
	if s.tls != nil {
		tlsConfig = s.tls.TLSConfig()
	}
	g := grpcServing{srv: grpc.NewServer(grpcserver.Options(tlsConfig)...), health: health.NewServer(), ln: s.grpcLn.Addr().String()}
	authv3.RegisterAuthorizationServer(g.srv, &extAuthz{a: s.auth})
	for _, name := range []string{"", extAuthzServiceName} {
		g.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(g.srv, g.health)
	reflection.Register(g.srv)
	wg.Go(func() {
		// Serve returns nil once stopped.
		if err := g.srv.Serve(s.grpcLn); err != nil {
			failed <- fmt.Errorf("admit auth: serving --grpc-listen: %w", err)
		}
	})
	return g
}

// logAttr names the address in the serving log line; none without
// --grpc-listen.
func (g grpcServing) logAttr() slog.Attr {
	if g.srv == nil {
		return slog.Attr{}
	}
	return slog.String("grpc_addr", g.ln)
}

// drain reports not serving to health checks, for good, while calls are
// still answered.
func (g grpcServing) drain() {
	if g.srv != nil {
		g.health.Shutdown()
	}
}

// servers are what a drain stops of it: the gRPC server, which stops
// accepting calls and lets those in flight finish until the drain's
// timeout; none without --grpc-listen.
func (g grpcServing) servers() []drain.Server {
	if g.srv == nil {
		return nil
	}
	return []drain.Server{drain.GRPC(g.srv)}
}
