package rlsd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/admitgo/admit/internal/pemfile"
	"github.com/admitgo/admit/rls"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/servertls"
)

// xdsClient takes admit rls's configuration from an xDS server: one ADS
// stream in state of the world, subscribed to rls.XDSType, each response
// loaded by Service.LoadXDS and ACKed, or NACKed with the refusal in
// error_detail while the configuration in force stays. When the stream
// fails or ends, it waits and opens a new one, the wait doubling from
// --xds-retry to --xds-retry-max and back once a stream brings a message;
// the configuration in force serves meanwhile.
type xdsClient struct {
	x    config.XDS
	conn *grpc.ClientConn
	svc  *rls.Service
	log  *slog.Logger
	// wait waits d or until ctx ends, reporting whether d passed; tests
	// replace it to see the waits and end them at once.
	wait func(ctx context.Context, d time.Duration) bool
	// loaded is closed once the first configuration is accepted.
	loaded chan struct{}
	// version is the version of the configuration in force, sent back in
	// a NACK and in a new stream's first request; only run touches it.
	version string
}

// newXDSClient makes the client of o's --xds-server; nothing is sent
// until run. A TLS file that does not load is an error.
func newXDSClient(o options, svc *rls.Service, log *slog.Logger) (*xdsClient, error) {
	creds, err := xdsCredentials(o)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(o.XDS.Server, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.XDS.MaxMsgBytes)))
	if err != nil {
		return nil, fmt.Errorf("admit rls: --xds-server %q: %w", o.XDS.Server, err)
	}
	return &xdsClient{x: o.XDS, conn: conn, svc: svc, log: log, wait: sleep, loaded: make(chan struct{})}, nil
}

// xdsCredentials are the stream's transport: cleartext, or with --xds-tls
// TLS 1.2 and up checking the server's certificate against --xds-ca (else
// the system's roots) and --xds-san (else the host dialled), showing
// --xds-client-cert, which is read again when its files change.
func xdsCredentials(o options) (credentials.TransportCredentials, error) {
	x := o.XDS
	if !x.TLS {
		return insecure.NewCredentials(), nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: x.SAN}
	if c.ServerName == "" {
		c.ServerName, _, _ = net.SplitHostPort(x.Server)
	}
	if x.CA != "" {
		var err error
		if c.RootCAs, err = pemfile.CertPool(x.CA); err != nil {
			return nil, fmt.Errorf("admit rls: --xds-ca %q: %w", x.CA, err)
		}
	}
	if x.ClientCert != "" {
		r, err := servertls.New(servertls.Config{CertFile: x.ClientCert, KeyFile: x.ClientKey, Front: "admit rls: --xds-client-cert", Now: o.now})
		if err != nil {
			return nil, err
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return r.GetCertificate(nil) }
	}
	return credentials.NewTLS(c), nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// run streams until ctx ends, then closes the connection.
func (c *xdsClient) run(ctx context.Context) {
	defer c.conn.Close()
	client := discoverypb.NewAggregatedDiscoveryServiceClient(c.conn)
	delay := c.x.Retry
	for {
		got, err := c.stream(ctx, client)
		if ctx.Err() != nil {
			return
		}
		if got {
			delay = c.x.Retry
		}
		if status.Code(err) == codes.ResourceExhausted {
			err = fmt.Errorf("a message larger than --xds-max-msg-bytes (%d): %w", c.x.MaxMsgBytes, err)
		}
		// Up to half shorter at random, so that replicas restarted
		// together do not return to the server together.
		d := delay - rand.N(delay/2+1)
		c.log.Error("admit rls: xDS stream failed; keeping the configuration in force", "server", c.x.Server, "err", err, "retry_in", d)
		if !c.wait(ctx, d) {
			return
		}
		delay = min(2*delay, c.x.RetryMax)
	}
}

// stream subscribes once and answers each response until the stream
// fails; got reports whether a response came.
func (c *xdsClient) stream(ctx context.Context, client discoverypb.AggregatedDiscoveryServiceClient) (got bool, err error) {
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx, metadata.New(c.x.Headers)))
	defer cancel()
	s, err := client.StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	req := &discoverypb.DiscoveryRequest{Node: c.node(), TypeUrl: rls.XDSType, VersionInfo: c.version}
	for {
		if err := s.Send(req); err != nil {
			_, err = s.Recv() // the stream's own error, where Send has io.EOF
			return got, err
		}
		resp, err := s.Recv()
		if err != nil {
			return got, err
		}
		got = true
		req = c.answer(resp)
	}
}

// answer loads a response and returns its ACK, or its NACK naming why.
func (c *xdsClient) answer(resp *discoverypb.DiscoveryResponse) *discoverypb.DiscoveryRequest {
	err := errors.New("admit rls: type " + resp.GetTypeUrl() + " was not asked for")
	if resp.GetTypeUrl() == rls.XDSType {
		err = c.svc.LoadXDS(resp.GetResources())
	}
	if err != nil {
		c.log.Error("admit rls: configuration from the xDS server refused; keeping the previous one", "server", c.x.Server, "version", resp.GetVersionInfo(), "err", err)
		return &discoverypb.DiscoveryRequest{TypeUrl: rls.XDSType, VersionInfo: c.version, ResponseNonce: resp.GetNonce(),
			ErrorDetail: &statuspb.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}}
	}
	c.version = resp.GetVersionInfo()
	c.log.Info("admit rls: configuration loaded from the xDS server", "server", c.x.Server, "version", c.version, "domains", c.svc.Config().Domains())
	select {
	case <-c.loaded:
	default:
		close(c.loaded)
	}
	return &discoverypb.DiscoveryRequest{TypeUrl: rls.XDSType, VersionInfo: c.version, ResponseNonce: resp.GetNonce()}
}

// node is the node admit rls says it is: --xds-node-id and
// --xds-node-metadata.
func (c *xdsClient) node() *corepb.Node {
	md := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range c.x.NodeMetadata {
		md.Fields[k] = structpb.NewStringValue(v)
	}
	return &corepb.Node{Id: c.x.NodeID, Metadata: md}
}
