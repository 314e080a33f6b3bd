package rls

import (
	"runtime"

	"google.golang.org/grpc"
)

// MaxStreams is how many calls one connection may have in flight under
// [ServerOptions], as net/http's HTTP/2 server allows by default, and
// MaxHeaderBytes the metadata of one call: Envoy's calls carry a few
// hundred bytes of it, where grpc-go's default lets a client send 16 MiB.
// grpc-go reads a call's message as it arrives, handing the window back,
// so a call a client never finishes holds its metadata and what it sent
// of its message, up to [MaxRequestBytes]: one connection holds at most
// MaxStreams times 320 KiB, 78 MiB, and only until the deployment's
// maximum connection age closes it.
const (
	MaxStreams     = 250
	MaxHeaderBytes = 64 << 10
)

// streamWindow is each call's flow-control window: grpc-go's least. A
// request larger than it (Envoy's are a few hundred bytes) waits for a
// WINDOW_UPDATE; what a stalled call holds is bounded by MaxRequestBytes,
// not by the window.
const streamWindow = 64 << 10

// ServerOptions are the options of a *grpc.Server that serves the service
// with [Service.Register], tuned for what Envoy sends it: many small unary
// calls on a few long-lived connections. Add the deployment's own
// (credentials, keepalive with a maximum connection age, a connection cap
// on the listener) after them; a later option of the same kind replaces
// the one here.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.MaxConcurrentStreams(MaxStreams),
		grpc.MaxHeaderListSize(MaxHeaderBytes),
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
		// write here and a read and an acknowledgement at the proxy. It
		// is each stream's window that holds data back: grpc-go
		// acknowledges a connection's data as it arrives.
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(MaxRequestBytes),
	}
}
