package rls

import (
	"runtime"

	"google.golang.org/grpc"
)

// ServerOptions are the options of a *grpc.Server that serves the service
// with [Service.Register], tuned for what Envoy sends it: many small unary
// calls on a few long-lived connections. Add the deployment's own
// (credentials, keepalive, stream limits) after them.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		// Without workers grpc-go starts a goroutine per call, whose
		// stack then grows by copying, a few times on every call; a
		// worker keeps its grown stack from call to call. A call that
		// finds every worker busy (waiting on a remote store, say) still
		// gets a goroutine of its own, so the count bounds only the idle
		// goroutines, each of whose stacks the collector shrinks and the
		// next call grows again: enough to take a burst of calls read
		// from one connection at once, and no more.
		grpc.NumStreamWorkers(uint32(16 * runtime.GOMAXPROCS(0))),
		// Fixed windows turn off grpc-go's bandwidth-delay estimate,
		// which would send a PING after every round trip of data for
		// good (calls this small never reach its ceiling), each one a
		// write here and a read and an acknowledgement at the proxy. A
		// window of MaxRequestBytes lets the largest request in without
		// waiting for a WINDOW_UPDATE, and holds what a connection can
		// send ahead of the handlers to what one call may.
		grpc.InitialWindowSize(MaxRequestBytes),
		grpc.InitialConnWindowSize(MaxRequestBytes),
	}
}
