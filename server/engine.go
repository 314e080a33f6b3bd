package server

import (
	"net/http"

	"github.com/admitgo/admit/internal/upstream"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/h1"
)

// The engine switch (--http-engine) is the way back to net/http alone,
// should admit's own HTTP/1.1 engine (package h1) or its direct upstream
// path (upstream.Direct) read something wrongly: both hand net/http what
// they do not take already, so switching them off leaves every request to
// the code they stand in front of. docs/operators.md lists what differs.

// h1Engine returns the engine that serves the proxy's listener in front of
// srv, or nil when srv serves it alone: with TLS, which the engine does
// not speak, or with --http-engine net/http.
func (s *server) h1Engine(srv *http.Server) *h1.Server {
	if s.tls != nil || s.cfg.HTTPEngine == config.EngineNetHTTP {
		return nil
	}
	return &h1.Server{HTTP: srv}
}

// upstreamTransport returns what forwards to the upstream: the
// configuration's, or admit's client, whose direct path the proxy takes for
// a plain-HTTP upstream, or with --http-engine net/http the same client
// without its direct path: net/http's Transport for every request, under
// the same bound on response heads and the same rules of which answers
// leave a connection fit for another.
func upstreamTransport(cfg config.Config) http.RoundTripper {
	switch {
	case cfg.Transport != nil:
		return cfg.Transport
	case cfg.HTTPEngine == config.EngineNetHTTP:
		return transportOnly{upstream.Transport()}
	}
	return upstream.Transport()
}

// transportOnly is admit's client without its direct path: the proxy finds
// no *upstream.Client in it, so every request goes through net/http's
// Transport, under the client's rules of which connections may carry a
// second answer (upstream.Client's RoundTrip).
type transportOnly struct{ *upstream.Client }
