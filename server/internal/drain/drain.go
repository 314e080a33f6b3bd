// Package drain ends a front's servers, the one way the proxy, admit auth
// and admit rls end theirs once their health reports draining: the
// front's servers stop accepting at once and what they serve gets the
// front's --drain-timeout to finish, then is cut; then the servers that
// answered health probes and scrapes meanwhile (the operations
// listeners) get a second.
package drain

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// afterTimeout is what the servers after the front get once it stopped:
// their requests are scrapes and probes, answered at once.
const afterTimeout = time.Second

// Server is a server a drain stops: net/http's Server and the h1 engine
// as they are, a gRPC server through GRPC.
type Server interface {
	// Shutdown stops accepting and waits for what is in flight until ctx
	// ends, and then returns an error.
	Shutdown(ctx context.Context) error
	// Close cuts what is left.
	Close() error
}

// Stop stops the front's servers together, each given timeout for what it
// serves before it is cut, then the servers of after, each given a second.
// It reports whether any of the front's had to be cut.
func Stop(timeout time.Duration, front []Server, after ...Server) (cut bool) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cut = stop(ctx, front)
	actx, acancel := context.WithTimeout(context.Background(), afterTimeout)
	defer acancel()
	stop(actx, after)
	return cut
}

// stop shuts servers down together, closing each that has not finished
// when ctx ends, and reports whether any was closed.
func stop(ctx context.Context, servers []Server) bool {
	var (
		wg  sync.WaitGroup
		cut atomic.Bool
	)
	for _, s := range servers {
		wg.Go(func() {
			if s.Shutdown(ctx) != nil {
				cut.Store(true)
				s.Close()
			}
		})
	}
	wg.Wait()
	return cut.Load()
}

// GRPC is s as a Server: Shutdown is GracefulStop, which waits for the
// calls in flight, for as long as ctx lasts; Close is Stop, which cuts
// them.
func GRPC(s *grpc.Server) Server { return grpcServer{s} }

type grpcServer struct{ s *grpc.Server }

func (g grpcServer) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.s.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g grpcServer) Close() error {
	g.s.Stop()
	return nil
}
