package rlsd

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/admitgo/admit/internal/testcert"
)

// answerOnce is an xDS server that answers a stream's first request.
type answerOnce struct {
	discoverypb.UnimplementedAggregatedDiscoveryServiceServer
}

func (answerOnce) StreamAggregatedResources(s grpc.BidiStreamingServer[discoverypb.DiscoveryRequest, discoverypb.DiscoveryResponse]) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	return s.Send(&discoverypb.DiscoveryResponse{VersionInfo: "v"})
}

// TestXDSTLSVerifiesTheServer streams from an xDS server over TLS only
// when its certificate chains to --xds-ca and names --xds-san (or the host
// dialled): not with another name, not against the system's roots, and
// not in cleartext.
func TestXDSTLSVerifiesTheServer(t *testing.T) {
	ca := testcert.NewCA(t, "xds CA")
	pair, err := tls.X509KeyPair(ca.Issue(t, testcert.Leaf{Serial: 2, DNSNames: []string{"xds.internal"}}))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}})))
	discoverypb.RegisterAggregatedDiscoveryServiceServer(srv, answerOnce{})
	go srv.Serve(ln)
	defer srv.Stop()
	for _, c := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"the CA and the name", []string{"--xds-tls", "--xds-ca", ca.File, "--xds-san", "xds.internal"}, true},
		{"the CA, the address dialled as the name", []string{"--xds-tls", "--xds-ca", ca.File}, false},
		{"another name", []string{"--xds-tls", "--xds-ca", ca.File, "--xds-san", "other.internal"}, false},
		{"the system's roots", []string{"--xds-tls", "--xds-san", "xds.internal"}, false},
		{"cleartext", nil, false},
	} {
		o, err := parseFlags(append([]string{"--xds-server", ln.Addr().String()}, c.args...), func(string) string { return "" }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		creds, err := xdsCredentials(o)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(o.XDS.Server, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := discoverypb.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
		if err == nil {
			if err = s.Send(&discoverypb.DiscoveryRequest{}); err == nil {
				_, err = s.Recv()
			}
		}
		cancel()
		conn.Close()
		if (err == nil) != c.ok {
			t.Errorf("%s: %v; want a stream: %v", c.name, err, c.ok)
		}
	}
}
