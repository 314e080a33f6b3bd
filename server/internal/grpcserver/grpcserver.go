// Package grpcserver holds the options of admit's gRPC servers, admit
// rls's and admit auth's --grpc-listen, which answer small unary calls of a
// few long-lived proxies: package rls's options for such calls, with the
// deployment's own that rls.ServerOptions leaves to it (keepalive, a
// maximum connection age, a handshake bound, credentials).
package grpcserver

import (
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/admitgo/admit/rls"
)

// idleTimeout closes a connection that carries no call, handshakeTimeout
// one whose TLS and HTTP/2 handshake does not finish, and maxAge every
// connection, after maxAgeGrace for the calls in flight (a call takes
// milliseconds): Envoy keeps its connections busy and reopens one it lost.
const (
	idleTimeout      = 5 * time.Minute
	handshakeTimeout = 10 * time.Second
	maxAge           = 30 * time.Minute
	maxAgeGrace      = 10 * time.Second
)

// Options are the options of a gRPC server of admit: over TLS with
// tlsConfig, cleartext HTTP/2 without.
func Options(tlsConfig *tls.Config) []grpc.ServerOption {
	opts := append(rls.ServerOptions(),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// A connection that carries no call for idleTimeout is closed, so
		// that idle connections cannot hold the process's descriptors, and
		// every connection after maxAge, so that calls a client never
		// finishes cannot hold their buffers for good; Envoy opens a new
		// one when it next needs to.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: idleTimeout,
			MaxConnectionAge: maxAge, MaxConnectionAgeGrace: maxAgeGrace}),
		grpc.ConnectionTimeout(handshakeTimeout))
	if tlsConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
	}
	return opts
}
