// Package servertls is the TLS side of admit's servers: the proxy's HTTPS
// listener, admit auth's --grpc-listen and admit rls's gRPC listener. Their
// certificate (--tls-cert, --tls-key) is loaded at startup, where a pair
// that does not load stops the process, and again whenever its files
// change, so that a rotated certificate reaches new connections without a
// restart; a new pair that does not load is refused and the last good one
// kept. VerifyClients adds admit rls's check of its clients' certificates
// (--client-ca, --client-san).
//
// The files are looked at on a handshake, at most once a second, and read
// whole rather than judged by their times: a certificate rewritten within
// the file system's clock tick, at the same size, is still seen. The cost
// is two small reads a second at most, and none while no client connects.
package servertls
