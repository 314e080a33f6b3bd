package rls

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Procedure is the gRPC method the service answers, as Envoy calls it.
const Procedure = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"

// Handler returns the handler of [Procedure] for gRPC clients (and Connect
// and gRPC-Web ones), to mount at that path on a server that speaks
// HTTP/2: over TLS, or cleartext (h2c) as Envoy's rate limit cluster
// usually connects. A request larger than [MaxRequestBytes] is refused with
// RESOURCE_EXHAUSTED before it is decoded.
func (s *Service) Handler() http.Handler {
	return connect.NewUnaryHandler(Procedure,
		func(ctx context.Context, req *connect.Request[pb.RateLimitRequest]) (*connect.Response[pb.RateLimitResponse], error) {
			resp, err := s.ShouldRateLimit(ctx, req.Msg)
			if err != nil {
				return nil, err
			}
			return connect.NewResponse(resp), nil
		},
		connect.WithReadMaxBytes(MaxRequestBytes),
	)
}

// Register registers the service's ShouldRateLimit on a gRPC server, such
// as a *grpc.Server, which answers small unary calls at about twice the
// rate of an HTTP/2 server from net/http (measured side by side on
// loopback). Give the server [ServerOptions].
func (s *Service) Register(r grpc.ServiceRegistrar) {
	pb.RegisterRateLimitServiceServer(r, grpcService{s: s})
}

// grpcService answers grpc-go's calls, with grpc-go's status errors.
type grpcService struct {
	pb.UnimplementedRateLimitServiceServer
	s *Service
}

func (g grpcService) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	resp, err := g.s.ShouldRateLimit(ctx, req)
	if err != nil {
		// connect's codes are gRPC's, by number.
		return nil, status.Error(codes.Code(connect.CodeOf(err)), err.Error())
	}
	return resp, nil
}
