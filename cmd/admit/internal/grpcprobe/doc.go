// Package grpcprobe tests admit's gRPC health service with grpc-go's own
// health client, the protocol of Kubernetes gRPC probes and
// grpc-health-probe, over cleartext HTTP/2 (--h2c). It is a module of its
// own so that admit's module does not depend on grpc-go; scripts/test runs
// it.
package grpcprobe
