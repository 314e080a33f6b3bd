package rlsd

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	confpb "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/admitgo/admit/rls"
)

// adsServer is an xDS server of the test's making: each stream's requests
// go to reqs, and the responses pushed to push go to the stream open. A
// minimal state-of-the-world server, rather than go-control-plane's
// server and snapshot cache, which live in a module admit does not
// otherwise need and would hide the ACKs and NACKs the tests read.
type adsServer struct {
	discoverypb.UnimplementedAggregatedDiscoveryServiceServer
	addr    string
	srv     *grpc.Server
	reqs    chan *discoverypb.DiscoveryRequest
	push    chan *discoverypb.DiscoveryResponse
	headers chan metadata.MD // each stream's metadata
	end     chan struct{}    // a value ends the stream open
}

func startADS(t *testing.T, addr string) *adsServer {
	t.Helper()
	a := &adsServer{reqs: make(chan *discoverypb.DiscoveryRequest, 16), push: make(chan *discoverypb.DiscoveryResponse),
		headers: make(chan metadata.MD, 16), end: make(chan struct{})}
	a.serve(t, addr)
	return a
}

// serve listens on addr (127.0.0.1:0 for any port) and serves until stop.
func (a *adsServer) serve(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a.addr = ln.Addr().String()
	a.srv = grpc.NewServer()
	discoverypb.RegisterAggregatedDiscoveryServiceServer(a.srv, a)
	go a.srv.Serve(ln)
	srv := a.srv
	t.Cleanup(srv.Stop)
}

func (a *adsServer) StreamAggregatedResources(s grpc.BidiStreamingServer[discoverypb.DiscoveryRequest, discoverypb.DiscoveryResponse]) error {
	md, _ := metadata.FromIncomingContext(s.Context())
	a.headers <- md
	go func() {
		for {
			r, err := s.Recv()
			if err != nil {
				return
			}
			a.reqs <- r
		}
	}()
	for {
		select {
		case r := <-a.push:
			if err := s.Send(r); err != nil {
				return err
			}
		case <-a.end:
			return io.ErrUnexpectedEOF
		case <-s.Context().Done():
			return nil
		}
	}
}

// request returns the next request admit rls sends.
func (a *adsServer) request(t *testing.T) *discoverypb.DiscoveryRequest {
	t.Helper()
	select {
	case r := <-a.reqs:
		return r
	case <-time.After(testTimeout):
		t.Fatal("no request from admit rls")
		return nil
	}
}

// send pushes a response of version and nonce holding configs and returns
// admit rls's answer to it.
func (a *adsServer) send(t *testing.T, version, nonce string, configs ...*confpb.RateLimitConfig) *discoverypb.DiscoveryRequest {
	t.Helper()
	resp := &discoverypb.DiscoveryResponse{VersionInfo: version, Nonce: nonce, TypeUrl: rls.XDSType}
	for _, c := range configs {
		res, err := anypb.New(c)
		if err != nil {
			t.Fatal(err)
		}
		resp.Resources = append(resp.Resources, res)
	}
	select {
	case a.push <- resp:
	case <-time.After(testTimeout):
		t.Fatal("no stream to push to")
	}
	r := a.request(t)
	if r.GetResponseNonce() != nonce {
		t.Fatalf("answer to nonce %q, want %q", r.GetResponseNonce(), nonce)
	}
	return r
}

// edgeConfig is the domain edge with a limit of n a minute per
// remote_address.
func edgeConfig(n uint32) *confpb.RateLimitConfig {
	return &confpb.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*confpb.RateLimitDescriptor{
		{Key: "remote_address", RateLimit: &confpb.RateLimitPolicy{Unit: confpb.RateLimitUnit_MINUTE, RequestsPerUnit: n}}}}
}

// startXDSRLS runs admit rls on a's configuration, feeding it first
// (after refused, each NACKed), and returns it with the channel its waits
// between streams are reported on: each wait lasts until the test reads it.
func startXDSRLS(t *testing.T, a *adsServer, first *confpb.RateLimitConfig, refused []*confpb.RateLimitConfig, args ...string) (*rlsServer, chan time.Duration) {
	t.Helper()
	o, err := parseFlags(append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--xds-server", a.addr,
		"--xds-retry", "1s", "--xds-retry-max", "4s"}, args...), func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	waits := make(chan time.Duration)
	o.xdsWait = func(ctx context.Context, d time.Duration) bool {
		select {
		case waits <- d:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		a.request(t)
		for i, c := range refused {
			if r := a.send(t, "bad", "r"+string(rune('0'+i)), c); r.GetErrorDetail() == nil || r.GetVersionInfo() != "" {
				t.Errorf("answer to a refused first configuration: %v, want a NACK of no version", r)
			}
		}
		if r := a.send(t, "1", "n1", first); r.GetErrorDetail() != nil || r.GetVersionInfo() != "1" {
			t.Errorf("answer to the first configuration: %v, want its ACK", r)
		}
	}()
	s := serveWith(t, o)
	<-fed
	return s, waits
}

// TestRLSXDS serves the configurations an xDS server sends: the first,
// an update, and not a refused one, which is NACKed and counted.
func TestRLSXDS(t *testing.T) {
	a := startADS(t, "127.0.0.1:0")
	noUnit := &confpb.RateLimitConfig{Domain: "edge", Descriptors: []*confpb.RateLimitDescriptor{{Key: "remote_address", RateLimit: &confpb.RateLimitPolicy{RequestsPerUnit: 1}}}}
	s, _ := startXDSRLS(t, a, edgeConfig(2), []*confpb.RateLimitConfig{noUnit}, "--xds-node-id", "n1", "--xds-node-metadata", "zone=a", "--xds-headers", "X-Token:abc")
	md := <-a.headers
	if got := md.Get("x-token"); len(got) != 1 || got[0] != "abc" {
		t.Fatalf("stream metadata x-token = %v, want [abc]", got)
	}
	c := s.client(t, nil)
	wantCodes(t, codesOf(t, c, "10.0.0.1", 3), pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT)

	if r := a.send(t, "2", "n2", edgeConfig(4)); r.GetErrorDetail() != nil || r.GetVersionInfo() != "2" {
		t.Fatalf("answer to an update: %v, want its ACK", r)
	}
	wantCodes(t, codesOf(t, c, "10.0.0.2", 5), pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT)

	r := a.send(t, "3", "n3", noUnit)
	if r.GetVersionInfo() != "2" || !strings.Contains(r.GetErrorDetail().GetMessage(), `xDS resource [0]: descriptors[0].rate_limit.unit: "": want second`) {
		t.Fatalf("answer to a refused update: %v, want a NACK keeping version 2 and naming the field", r)
	}
	wantCodes(t, codesOf(t, c, "10.0.0.3", 5), pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT)
	body := s.scrape(t)
	if got := metricValue(body, `admit_rls_config_loads_total{admit_rls_result="failed"`); got != 2 {
		t.Fatalf("config loads failed = %d, want 2: the refused first and the refused update", got)
	}
	if got := metricValue(body, `admit_rls_config_loads_total{admit_rls_result="loaded"`); got != 2 {
		t.Fatalf("config loads = %d, want 2", got)
	}
}

// TestRLSXDSFirstRequest names the node and asks for the type.
func TestRLSXDSFirstRequest(t *testing.T) {
	a := startADS(t, "127.0.0.1:0")
	o, err := parseFlags([]string{"--xds-server", a.addr, "--xds-node-id", "n1", "--xds-node-metadata", "zone=a,cell=b"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := rls.New(rls.Options{})
	if err != nil {
		t.Fatal(err)
	}
	xc, err := newXDSClient(o, svc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); xc.run(ctx) }()
	defer func() { cancel(); <-done }()
	r := a.request(t)
	md := r.GetNode().GetMetadata().GetFields()
	if r.GetNode().GetId() != "n1" || md["zone"].GetStringValue() != "a" || md["cell"].GetStringValue() != "b" || r.GetTypeUrl() != rls.XDSType || r.GetVersionInfo() != "" {
		t.Fatalf("first request %v, want node n1 with its metadata, type %s, no version", r, rls.XDSType)
	}
}

// TestRLSXDSServerGone keeps serving the configuration in force while the
// xDS server is away, waits longer at each failure up to --xds-retry-max,
// and subscribes again, with the version it holds, once it is back.
func TestRLSXDSServerGone(t *testing.T) {
	a := startADS(t, "127.0.0.1:0")
	s, waits := startXDSRLS(t, a, edgeConfig(2), nil)
	c := s.client(t, nil)
	a.srv.Stop()
	var got []time.Duration
	for range 4 {
		select {
		case d := <-waits:
			got = append(got, d)
		case <-time.After(testTimeout):
			t.Fatal("no retry")
		}
	}
	for i, hi := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if got[i] < hi/2 || got[i] > hi {
			t.Fatalf("waits %v: wait %d not within [%v, %v]", got, i, hi/2, hi)
		}
	}
	wantCodes(t, codesOf(t, c, "10.0.0.1", 3), pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT)

	a.serve(t, a.addr)
	var r *discoverypb.DiscoveryRequest
	for r == nil {
		select {
		case <-waits: // the failures before the server listened again
		case r = <-a.reqs:
		case <-time.After(testTimeout):
			t.Fatal("no new subscription")
		}
	}
	if r.GetVersionInfo() != "1" || r.GetNode() == nil {
		t.Fatalf("new subscription %v, want the node and version 1", r)
	}
	if ack := a.send(t, "2", "m1", edgeConfig(4)); ack.GetVersionInfo() != "2" {
		t.Fatalf("answer %v, want the ACK of version 2", ack)
	}
	a.end <- struct{}{}
	select {
	case d := <-waits:
		if d > time.Second {
			t.Fatalf("wait %v after a stream that brought a message, want at most --xds-retry", d)
		}
	case <-time.After(testTimeout):
		t.Fatal("no retry")
	}
	<-a.headers
	a.request(t)
}

// TestRLSXDSTooLarge ends the stream of a message larger than
// --xds-max-msg-bytes, before it is read, and keeps the configuration in
// force: a configuration of a million descriptors costs the client no
// more than the bound.
func TestRLSXDSTooLarge(t *testing.T) {
	a := startADS(t, "127.0.0.1:0")
	s, waits := startXDSRLS(t, a, edgeConfig(2), nil, "--xds-max-msg-bytes", "65536")
	huge := &confpb.RateLimitConfig{Domain: "edge"}
	for i := range 20000 {
		huge.Descriptors = append(huge.Descriptors, &confpb.RateLimitDescriptor{Key: "k" + string(rune('a'+i%26)), Value: strings.Repeat("v", i%7) + string(rune(i))})
	}
	res, err := anypb.New(huge)
	if err != nil {
		t.Fatal(err)
	}
	a.push <- &discoverypb.DiscoveryResponse{VersionInfo: "2", Nonce: "big", TypeUrl: rls.XDSType, Resources: []*anypb.Any{res}}
	select {
	case <-waits:
	case r := <-a.reqs:
		t.Fatalf("answer %v to a message beyond the bound, want the stream ended", r)
	case <-time.After(testTimeout):
		t.Fatal("no retry")
	}
	wantCodes(t, codesOf(t, s.client(t, nil), "10.0.0.1", 3), pb.RateLimitResponse_OK, pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT)
}

// TestRLSXDSFlags wants one source of configuration, TLS settings only
// with TLS, and the message bound within a file's.
func TestRLSXDSFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--xds-server", "127.0.0.1:1", "--config", "x"}, "--config and --xds-server are both set"},
		{[]string{}, "or --xds-server (ADMIT_RLS_XDS_SERVER)"},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-ca", "ca.pem"}, "--xds-ca is set but --xds-tls (ADMIT_RLS_XDS_TLS) is not"},
		// A listener's address is no server's to dial.
		{[]string{"--xds-server", "127.0.0.1:0"}, `--xds-server "127.0.0.1:0": port "0": want 1 to 65535`},
		{[]string{"--xds-server", ":18000"}, `--xds-server ":18000": want a host`},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-san", "x"}, "--xds-san is set but --xds-tls"},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-tls", "--xds-client-cert", "c.pem"}, "--xds-client-cert and --xds-client-key go together"},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-retry", "5s", "--xds-retry-max", "1s"}, "--xds-retry-max 1s is shorter than --xds-retry 5s"},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-max-msg-bytes", "16777217"}, "want a whole number from 1 to 16777216"},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-headers", "grpc-timeout:1"}, `header "grpc-timeout"`},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-headers", "secret-token"}, `"(not shown)": a pair is not key:value`},
		{[]string{"--xds-server", "127.0.0.1:1", "--xds-node-metadata", "a=1,a=2"}, `key "a" is given twice`},
	} {
		_, err := parseFlags(tc.args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-token") {
			t.Errorf("%v: the error shows the header: %v", tc.args, err)
		}
	}
}

// TestRLSXDSReference maps CONFIG_TYPE=GRPC_XDS_SOTW and the
// CONFIG_GRPC_XDS_ variables onto the xDS flags, the TLS files only with
// CONFIG_GRPC_XDS_SERVER_USE_TLS, and refuses them without TLS.
func TestRLSXDSReference(t *testing.T) {
	env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:6379", "CONFIG_TYPE": "GRPC_XDS_SOTW",
		"CONFIG_GRPC_XDS_SERVER_URL": "xds.mesh:18000", "CONFIG_GRPC_XDS_NODE_ID": "rl-1", "CONFIG_GRPC_XDS_NODE_METADATA": "zone=a",
		"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS": "x-token:t", "CONFIG_GRPC_XDS_SERVER_USE_TLS": "true",
		"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": "ca.pem", "CONFIG_GRPC_XDS_SERVER_TLS_SAN": "xds.internal",
		"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL": "2s", "XDS_CLIENT_BACKOFF_MAX_INTERVAL": "30s", "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES": "1000000"}
	o, err := parseFlags(nil, referenceEnv(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	x := o.XDS
	if o.Config != "" || x.Server != "xds.mesh:18000" || x.NodeID != "rl-1" || x.NodeMetadata["zone"] != "a" || x.Headers["x-token"] != "t" ||
		!x.TLS || x.CA != "ca.pem" || x.SAN != "xds.internal" || x.Retry != 2*time.Second || x.RetryMax != 30*time.Second || x.MaxMsgBytes != 1000000 {
		t.Fatalf("config %q, xDS %+v", o.Config, x)
	}
	delete(env, "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES")
	env["CONFIG_GRPC_XDS_SERVER_USE_TLS"] = "false"
	if o, err = parseFlags(nil, referenceEnv(env), io.Discard); err != nil || o.XDS.CA != "" || o.XDS.MaxMsgBytes != 4<<20 {
		t.Fatalf("without TLS: %+v, %v; want the TLS files not read, gRPC's default message bound", o.XDS, err)
	}
	// 0 is the reference's "gRPC's default", which every environment made
	// from its settings struct holds.
	env["XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES"] = "0"
	if o, err = parseFlags(nil, referenceEnv(env), io.Discard); err != nil || o.XDS.MaxMsgBytes != 4<<20 {
		t.Fatalf("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES=0: %+v, %v; want gRPC's default message bound", o.XDS, err)
	}
	env["CONFIG_TYPE"] = "FILE"
	if o, err = parseFlags(nil, referenceEnv(env), io.Discard); err != nil || o.XDS.Server != "" || o.Config == "" {
		t.Fatalf("CONFIG_TYPE=FILE: %+v, %v; want files", o.XDS, err)
	}
}
