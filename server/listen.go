package server

import (
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/server/listener"
)

// listen binds the proxy's and the metrics listeners, and admit auth's
// --grpc-listen, each under its own connection caps. The proxy's accepts
// PROXY protocol headers from the configured peers.
func (s *server) listen() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("admit: --listen: %w", err)
	}
	mln, err := net.Listen("tcp", s.cfg.MetricsListen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("admit: --metrics-listen: %w", err)
	}
	// Trusted proxies carry clients' requests to the proxy, not scrapes,
	// so none is exempt here. Loopback peers are held to the per-client
	// connection cap too: exempting them would let one local process take
	// every slot from the address a local Prometheus and probe share, and
	// the default cap leaves those two room (a scraper keeps one
	// connection, two while scrapes overlap; a probe one).
	s.metricsLn = listener.Limit(mln, listener.Caps{Max: s.cfg.MetricsMaxConns, PerClient: s.cfg.MetricsPerClient}, &s.metricsConns)
	s.ln = ln
	if len(s.cfg.ProxyProtocolFrom) > 0 {
		s.ln = clientip.ProxyProtocolListener(ln, s.cfg.ProxyProtocolFrom, 0)
	}
	s.ln = listener.Limit(s.ln, listener.Caps{Max: s.cfg.MaxConns, PerClient: s.cfg.MaxConnsPerClient, Trusted: s.resolver.Trusts}, &s.conns)
	if s.cfg.GRPCListen != "" {
		gln, err := net.Listen("tcp", s.cfg.GRPCListen)
		if err != nil {
			return fmt.Errorf("admit auth: --grpc-listen: %w", err)
		}
		// Envoy's callers are trusted proxies, exempt from the per-client
		// cap as on the proxy's listener; any other caller is refused
		// call by call, and capped here.
		s.grpcLn = listener.Limit(gln, listener.Caps{Max: s.cfg.MaxConns, PerClient: s.cfg.MaxConnsPerClient, Trusted: s.resolver.Trusts}, &s.grpcConns)
	}
	return nil
}

// listenerCounts are the connection counts of the listeners listen binds,
// by the name admit.server.connections gives each.
func (s *server) listenerCounts() map[string]*listener.Counts {
	counts := map[string]*listener.Counts{"proxy": &s.conns, "metrics": &s.metricsConns}
	if s.cfg.GRPCListen != "" {
		counts["ext_authz"] = &s.grpcConns
	}
	return counts
}

// proxyServer is the HTTP server of the proxy's listener.
func (s *server) proxyServer(errorLog *log.Logger) *http.Server {
	srv := &http.Server{
		Handler:           s.handler,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxConcurrentStreams},
		ErrorLog:          errorLog,
	}
	srv.RegisterOnShutdown(func() { close(s.listenerClosed) }) // runs once the listener is closed
	if s.tls != nil {
		srv.TLSConfig = s.tls.TLSConfig()
	}
	if s.cfg.H2C {
		// HTTP/2 with prior knowledge beside HTTP/1.1, under the same
		// header and stream limits as over TLS (MaxHeaderBytes, HTTP2).
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		srv.Protocols = &p
	}
	return srv
}
