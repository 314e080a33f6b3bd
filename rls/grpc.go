package rls

import (
	"runtime"

	"google.golang.org/grpc"
)

// MaxStreams is how many calls one connection may have in flight under
// [ServerOptions], as net/http's HTTP/2 server allows by default. Each may buffer up to about two requests' worth
// (MaxRequestBytes in its flow-control window, and the message being
// decoded), so it bounds what one connection can make the process hold.
const MaxStreams = 250

// ServerOptions are the options of a *grpc.Server that serves the service
// with [Service.Register], tuned for what Envoy sends it: many small unary
// calls on a few long-lived connections. Add the deployment's own
// (credentials, keepalive, a connection cap on the listener) after them; a
// later option of the same kind replaces the one here.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.MaxConcurrentStreams(MaxStreams),
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
		// waiting for a WINDOW_UPDATE. It is each stream's that holds
		// data back: grpc-go acknowledges a connection's data as it
		// arrives, so what a connection may send ahead is its streams'
		// windows, MaxStreams of them.
		grpc.InitialWindowSize(MaxRequestBytes),
		grpc.InitialConnWindowSize(MaxRequestBytes),
	}
}
