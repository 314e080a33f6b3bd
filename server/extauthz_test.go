package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/admitgo/admit/server/internal/config"
)

// startAuth runs admit auth configured by args on loopback ports, as on
// the command line with an empty environment and a frozen clock.
func startAuth(t *testing.T, args ...string) *running {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...)
	cfg, err := config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...), args, func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Now = frozen()
	return startConfig(t, cfg)
}

// checkClient is a client of r's ext_authz Check, over TLS when roots is
// not nil; its calls come from 127.0.0.1.
func checkClient(t *testing.T, r *running, roots *x509.CertPool) (authv3.AuthorizationClient, *grpc.ClientConn) {
	t.Helper()
	creds := insecure.NewCredentials()
	if roots != nil {
		creds = credentials.NewTLS(&tls.Config{RootCAs: roots})
	}
	conn, err := grpc.NewClient(r.s.grpcLn.Addr().String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return authv3.NewAuthorizationClient(conn), conn
}

// envoyAsks is a CheckRequest as Envoy's ext_authz filter sends it for a
// client at source (address:port) asking method on path of app.example
// over https: the request's fields, and in the headers map every header,
// pseudo-headers included, lower-cased, with headers ("name: value").
func envoyAsks(method, path, source string, headers ...string) *authv3.CheckRequest {
	host, port, _ := net.SplitHostPort(source)
	p, _ := strconv.Atoi(port)
	h := map[string]string{":method": method, ":path": path, ":authority": "app.example", ":scheme": "https",
		"x-forwarded-proto": "https", "x-request-id": "5f0c1d9e"}
	for _, line := range headers {
		name, value, _ := strings.Cut(line, ": ")
		h[name] = value
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Source: &authv3.AttributeContext_Peer{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
			SocketAddress: &corev3.SocketAddress{Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)}}}}},
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: method, Path: path, Host: "app.example", Scheme: "https", Protocol: "HTTP/2", Headers: h}},
	}}
}

// verdict is a CheckResponse as Envoy acts on it.
type verdict struct {
	code     codes.Code
	status   int         // 200 when allowed; the denied response's otherwise
	upstream http.Header // allowed: the fields set on the request to the app
	client   http.Header // the fields of the answer to the client
	body     string
}

func (v verdict) outcome() string {
	if v.code == codes.OK {
		return v.upstream.Get(admitStatus)
	}
	return v.client.Get(admitStatus)
}

// fieldsOf reads header options as Envoy applies them, refusing any that
// would append to a client's own field of that name.
func fieldsOf(t *testing.T, opts []*corev3.HeaderValueOption) http.Header {
	t.Helper()
	h := make(http.Header)
	for _, o := range opts {
		if o.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
			t.Errorf("%s: append action %v, want OVERWRITE_IF_EXISTS_OR_ADD", o.GetHeader().GetKey(), o.GetAppendAction())
		}
		h.Add(o.GetHeader().GetKey(), o.GetHeader().GetValue())
	}
	return h
}

// check calls Check with req and reads the verdict.
func check(t *testing.T, c authv3.AuthorizationClient, req *authv3.CheckRequest) verdict {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := c.Check(ctx, req)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	v := verdict{code: codes.Code(resp.GetStatus().GetCode())}
	if v.code == codes.OK {
		ok := resp.GetOkResponse()
		if ok == nil {
			t.Fatalf("Check: OK without an ok_response: %v", resp)
		}
		v.status, v.upstream, v.client = http.StatusOK, fieldsOf(t, ok.GetHeaders()), fieldsOf(t, ok.GetResponseHeadersToAdd())
		return v
	}
	denied := resp.GetDeniedResponse()
	if denied == nil {
		t.Fatalf("Check: %v without a denied_response: %v", v.code, resp)
	}
	v.status, v.client, v.body = int(denied.GetStatus().GetCode()), fieldsOf(t, denied.GetHeaders()), denied.GetBody()
	return v
}

// TestExtAuthzAdmitsThenRefuses: a route's budget holds through Check as
// through the proxy: 20 allowed with Admit-Status set on the request to the
// app, then RESOURCE_EXHAUSTED with a 429 for the client carrying
// Retry-After, the rate-limit fields and the door's body.
func TestExtAuthzAdmitsThenRefuses(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}")
	c, _ := checkClient(t, r, nil)
	for i := range 20 {
		v := check(t, c, envoyAsks("GET", "/l/abc", "198.51.100.7:40000"))
		if v.code != codes.OK || v.outcome() != authOK {
			t.Fatalf("call %d: got %v %s, want OK ok", i+1, v.code, v.outcome())
		}
	}
	v := check(t, c, envoyAsks("GET", "/l/abc", "198.51.100.7:40001"))
	if v.code != codes.ResourceExhausted || v.status != http.StatusTooManyRequests || v.outcome() != "rate_limited" {
		t.Fatalf("call 21: got %v %d %s, want RESOURCE_EXHAUSTED 429 rate_limited", v.code, v.status, v.outcome())
	}
	for _, name := range []string{"Retry-After", "RateLimit", "RateLimit-Policy", "Content-Type"} {
		if v.client.Get(name) == "" {
			t.Errorf("call 21: no %s among the denied response's fields %v", name, v.client)
		}
	}
	if want := "Too Many Requests: limit \"link\"\n"; v.body != want {
		t.Errorf("call 21: the denied response's body is %q, want %q, the proxy's", v.body, want)
	}
	if v := check(t, c, envoyAsks("GET", "/other", "198.51.100.7:40002")); v.code != codes.OK || v.outcome() != authUnlimited {
		t.Errorf("a path no route matches: got %v %s, want OK unlimited", v.code, v.outcome())
	}
	if n := r.scrapeCount(t, `admit_server_connections{admit_server_listener="ext_authz"`); n != 1 {
		t.Errorf("admit_server_connections of ext_authz: got %d, want 1, Envoy's", n)
	}
}

// TestExtAuthzPolicyHeaders: with --policy-headers the rate-limit fields of
// an admitted request are in the decision, whichever protocol asked: in a
// forward-auth answer, and in Check's answer to the client, while
// Admit-Status goes to the app alone.
func TestExtAuthzPolicyHeaders(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}", "--policy-headers")
	c, _ := checkClient(t, r, nil)
	v := check(t, c, envoyAsks("GET", "/l/abc", "198.51.100.7:40000"))
	if v.code != codes.OK || v.client.Get("RateLimit") == "" || v.client.Get(admitStatus) != "" || len(v.upstream) != 1 {
		t.Errorf("Check: got %v, to the client %v, to the app %v; want OK, RateLimit to the client and Admit-Status alone to the app", v.code, v.client, v.upstream)
	}
	w := authAsk(r.s, "127.0.0.1:1", caddyAsks("GET", "/l/abc", "198.51.100.8")...)
	if w.Code != http.StatusOK || w.Header().Get("RateLimit") == "" {
		t.Errorf("forward-auth: got %d with fields %v, want 200 with RateLimit", w.Code, w.Header())
	}
}

// TestExtAuthzTrustsCallers: the source address is the client only when
// the caller is a --trusted-proxy; any other caller is denied and its
// source never judged.
func TestExtAuthzTrustsCallers(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "10.0.0.0/24", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}")
	c, _ := checkClient(t, r, nil)
	for _, path := range []string{"/l/abc", "/other"} {
		v := check(t, c, envoyAsks("GET", path, "10.0.0.2:40000"))
		if v.code != codes.PermissionDenied || v.status != http.StatusForbidden || v.outcome() != authUntrusted {
			t.Errorf("%s from an untrusted caller: got %v %d %s, want PERMISSION_DENIED 403 %s", path, v.code, v.status, v.outcome(), authUntrusted)
		}
	}
}

// TestExtAuthzSourceKeys: a trusted caller's source addresses key the
// client, each its own bucket; an X-Forwarded-For in the headers moves the
// key only when the source is itself a trusted proxy, so a client that
// sends its own cannot spread its requests over buckets.
func TestExtAuthzSourceKeys(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32,10.0.0.0/24", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}")
	c, _ := checkClient(t, r, nil)
	spend := func(source string, headers func(i int) []string) {
		t.Helper()
		for i := range 20 {
			if v := check(t, c, envoyAsks("GET", "/l/a", source, headers(i)...)); v.code != codes.OK {
				t.Fatalf("%s call %d: got %v %s, want OK", source, i+1, v.code, v.outcome())
			}
		}
	}
	spoofed := func(i int) []string { return []string{"x-forwarded-for: 203.0.113." + strconv.Itoa(i)} }
	spend("198.51.100.7:40000", spoofed)
	if v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:40001", "x-forwarded-for: 203.0.113.99")); v.code != codes.ResourceExhausted {
		t.Errorf("call 21 with a new X-Forwarded-For: got %v, want RESOURCE_EXHAUSTED: the key is the source", v.code)
	}
	if v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.8:40000")); v.code != codes.OK {
		t.Errorf("another source: got %v %s, want OK: its bucket is its own", v.code, v.outcome())
	}
	// A balancer in front of Envoy: the source is trusted, so the hop it
	// appended is the client.
	spend("10.0.0.9:40000", func(int) []string { return []string{"x-forwarded-for: 203.0.113.1, 192.0.2.1"} })
	if v := check(t, c, envoyAsks("GET", "/l/a", "10.0.0.9:40000", "x-forwarded-for: 203.0.113.1, 192.0.2.2")); v.code != codes.OK {
		t.Errorf("another client behind a trusted source: got %v %s, want OK", v.code, v.outcome())
	}
	if v := check(t, c, envoyAsks("GET", "/l/a", "10.0.0.9:40000", "x-forwarded-for: 192.0.2.1")); v.code != codes.ResourceExhausted {
		t.Errorf("the first client again behind a trusted source: got %v, want RESOURCE_EXHAUSTED", v.code)
	}
}

// TestExtAuthzReadsOneRequest: Check judges the request Envoy's fields
// tell of, in the form the front forwards it, and refuses one it cannot
// read as one request; no forwarding header of the client's names the
// request.
func TestExtAuthzReadsOneRequest(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}")
	c, _ := checkClient(t, r, nil)
	const src = "198.51.100.7:40000"
	bare := envoyAsks("GET", "/l/a", src)
	for name := range bare.Attributes.Request.Http.Headers {
		if strings.HasPrefix(name, ":") {
			delete(bare.Attributes.Request.Http.Headers, name)
		}
	}
	headerMap := envoyAsks("GET", "/l/a", src, "x-forwarded-for: 192.0.2.1")
	headerMap.Attributes.Request.Http.HeaderMap = &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: "x-forwarded-for", RawValue: []byte("192.0.2.1")}, {Key: ":path", Value: "/l/a"}}}
	onlyMap := envoyAsks("GET", "/l/a", src)
	onlyMap.Attributes.Request.Http.HeaderMap = &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: "x-a", RawValue: []byte("1")}, {Key: "x-a", RawValue: []byte("2")}}}
	onlyMap.Attributes.Request.Http.Headers = nil
	twoTellings := envoyAsks("GET", "/l/a", src, "x-forwarded-for: 192.0.2.1")
	twoTellings.Attributes.Request.Http.HeaderMap = &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: "x-forwarded-for", RawValue: []byte("192.0.2.2")}}}
	noSource := envoyAsks("GET", "/l/a", src)
	noSource.Attributes.Source = nil
	absolute := envoyAsks("GET", "/l/a", src)
	absolute.Attributes.Request.Http.Path = "http://elsewhere/l/a"
	tests := []struct {
		name    string
		req     *authv3.CheckRequest
		code    codes.Code
		status  int
		outcome string
	}{
		{"as Envoy sends it", envoyAsks("GET", "/l/a", src), codes.OK, 200, authOK},
		{"without pseudo-headers", bare, codes.OK, 200, authOK},
		{"headers and an agreeing header_map", headerMap, codes.OK, 200, authOK},
		{"header_map alone, a field twice", onlyMap, codes.OK, 200, authOK},
		{"the client's X-Original-URI", envoyAsks("GET", "/other", src, "x-original-method: GET", "x-original-uri: /l/a"), codes.OK, 200, authUnlimited},
		{"the client's X-Forwarded-Uri", envoyAsks("GET", "/other", src, "x-forwarded-method: GET", "x-forwarded-uri: /l/a"), codes.OK, 200, authUnlimited},
		{"headers and header_map disagree", twoTellings, codes.InvalidArgument, 400, authMalformed},
		{":path against path", envoyAsks("GET", "/other", src, ":path: /l/a"), codes.InvalidArgument, 400, authMalformed},
		{":method against method", envoyAsks("POST", "/l/a", src, ":method: GET"), codes.InvalidArgument, 400, authMalformed},
		{":authority against host", envoyAsks("GET", "/l/a", src, ":authority: elsewhere.example"), codes.InvalidArgument, 400, authMalformed},
		{"a host header against host", envoyAsks("GET", "/l/a", src, "host: elsewhere.example"), codes.InvalidArgument, 400, authMalformed},
		{"no source", noSource, codes.InvalidArgument, 400, authMalformed},
		{"absolute path", absolute, codes.InvalidArgument, 400, authMalformed},
		{"a header name not a token", envoyAsks("GET", "/l/a", src, "x a: 1"), codes.InvalidArgument, 400, authMalformed},
		{"a path the app would read otherwise", envoyAsks("GET", "/l//a", src), codes.InvalidArgument, 400, authMalformed},
		{"an escape the proxy would decode", envoyAsks("GET", "/l/%61", src), codes.InvalidArgument, 400, authMalformed},
		{"an encoded slash", envoyAsks("GET", "/l/a%2Fb", src), codes.InvalidArgument, 400, authMalformed},
		{"TRACE", envoyAsks("TRACE", "/l/a", src), codes.Unimplemented, 501, authMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := check(t, c, tt.req)
			if v.code != tt.code || v.status != tt.status || v.outcome() != tt.outcome {
				t.Errorf("got %v %d %s (%q), want %v %d %s", v.code, v.status, v.outcome(), v.body, tt.code, tt.status, tt.outcome)
			}
		})
	}
}

// TestExtAuthzDenyStatus: --deny-status answers every denial with its
// status, and the code with it, while Admit-Status and Retry-After still
// tell the refusal.
func TestExtAuthzDenyStatus(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}", "--deny-status", "403")
	c, _ := checkClient(t, r, nil)
	for range 20 {
		check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:1"))
	}
	v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:1"))
	if v.code != codes.PermissionDenied || v.status != http.StatusForbidden || v.outcome() != "rate_limited" || v.client.Get("Retry-After") == "" {
		t.Errorf("got %v %d %s, Retry-After %q, want PERMISSION_DENIED 403 rate_limited with Retry-After", v.code, v.status, v.outcome(), v.client.Get("Retry-After"))
	}
	if v := check(t, c, envoyAsks("GET", "/l//a", "198.51.100.8:1")); v.status != http.StatusForbidden || v.outcome() != authMalformed {
		t.Errorf("a malformed request: got %d %s, want 403 %s", v.status, v.outcome(), authMalformed)
	}
}

// TestExtAuthzTLS: with --tls-cert Check is served over TLS, and the gRPC
// health service answers beside it.
func TestExtAuthzTLS(t *testing.T) {
	cert, key, roots := selfSigned(t)
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}", "--tls-cert", cert, "--tls-key", key)
	c, conn := checkClient(t, r, roots)
	if v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:1")); v.code != codes.OK {
		t.Errorf("got %v, want OK", v.code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, service := range []string{"", extAuthzServiceName} {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: got %v, %v, want SERVING", service, resp.GetStatus(), err)
		}
	}
}

// TestExtAuthzStartupErrors: a --grpc-listen or --envoy-http-prefix that
// cannot serve is refused at startup with exit 2, named as the user gave
// it.
func TestExtAuthzStartupErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no port", []string{"--grpc-listen", "127.0.0.1"}, nil, `admit: --grpc-listen "127.0.0.1": missing port in address`},
		{"a port out of range", []string{"--grpc-listen", "127.0.0.1:70000"}, nil, `admit: --grpc-listen "127.0.0.1:70000": port must be a number`},
		{"from the environment", nil, map[string]string{"ADMIT_GRPC_LISTEN": "grpc"}, `admit: ADMIT_GRPC_LISTEN "grpc": missing port in address`},
		{"the forward-auth listener's address", []string{"--listen", "127.0.0.1:9191", "--grpc-listen", "127.0.0.1:9191"}, nil, "admit auth: --grpc-listen (ADMIT_GRPC_LISTEN) 127.0.0.1:9191 is --listen's address"},
		{"a prefix not a path", []string{"--envoy-http-prefix", "envoy"}, nil, `admit: --envoy-http-prefix "envoy": want a path`},
		{"a prefix ending in a slash", []string{"--envoy-http-prefix", "/envoy/"}, nil, `admit: --envoy-http-prefix "/envoy/": want segments`},
		{"a prefix with an escape", nil, map[string]string{"ADMIT_ENVOY_HTTP_PREFIX": "/%65nvoy"}, `admit: ADMIT_ENVOY_HTTP_PREFIX "/%65nvoy": want segments`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runArgs(t, tt.env, append([]string{"auth", "--trusted-proxy", "127.0.0.1/32"}, tt.args...)...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v, want an error starting %q", err, tt.want)
			}
			var uerr usageError
			if !errors.As(err, &uerr) {
				t.Errorf("got %T, want a usage error (exit 2)", err)
			}
		})
	}
}

// TestExtAuthzClientsFields: the fields of a Check are the client's own,
// which Envoy forwards to the app, so a field the proxy would not forward
// as it is refuses the request, as the proxy's exactness does: here an
// X-Forwarded-Host beside a route that names a host.
func TestExtAuthzClientsFields(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET app.example/l/{id}")
	c, _ := checkClient(t, r, nil)
	if v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:1")); v.code != codes.OK || v.outcome() != authOK {
		t.Errorf("plain: got %v %s, want OK ok", v.code, v.outcome())
	}
	if v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:1", "x-forwarded-host: elsewhere.example")); v.code != codes.InvalidArgument || v.outcome() != authMalformed {
		t.Errorf("with the client's X-Forwarded-Host: got %v %s, want INVALID_ARGUMENT %s", v.code, v.outcome(), authMalformed)
	}
}

// envoyHTTPAsks sends s, from peer, Envoy's HTTP ext_authz request for
// target under the prefix /envoy with headers ("Name: value"), as Envoy
// sends it with x-forwarded-for and x-forwarded-proto among its
// allowed_headers.
func envoyHTTPAsks(s *server, peer, method, target string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.RemoteAddr, r.Host = peer, "app.example"
	r.Header.Set("Content-Length", "0")
	r.Header.Set("X-Forwarded-Proto", "https")
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		r.Header.Add(name, value)
	}
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	return w
}

// TestExtAuthzHTTPService: under --envoy-http-prefix the original request
// is the request line after the prefix, from a trusted Envoy alone, and the
// client the first untrusted hop of X-Forwarded-For from the right; a
// request elsewhere is a forward-auth request as before.
func TestExtAuthzHTTPService(t *testing.T) {
	s := authServer(t, "--route", "link=GET /l/{id}", "--envoy-http-prefix", "/envoy")
	for i := range 20 {
		spoof := "203.0.113." + strconv.Itoa(i) + ", 198.51.100.7"
		if w := envoyHTTPAsks(s, edge, "GET", "/envoy/l/a?x=1", "X-Forwarded-For: "+spoof); w.Code != http.StatusOK || w.Header().Get(admitStatus) != authOK {
			t.Fatalf("request %d: got %d %s, want 200 ok", i+1, w.Code, w.Header().Get(admitStatus))
		}
	}
	w := envoyHTTPAsks(s, edge, "GET", "/envoy/l/a", "X-Forwarded-For: 203.0.113.99, 198.51.100.7")
	if w.Code != http.StatusTooManyRequests || w.Header().Get(admitStatus) != "rate_limited" || w.Header().Get("Retry-After") == "" {
		t.Errorf("request 21: got %d %s, Retry-After %q, want 429 rate_limited with Retry-After", w.Code, w.Header().Get(admitStatus), w.Header().Get("Retry-After"))
	}
	tests := []struct {
		name    string
		peer    string
		target  string
		headers []string
		status  int
		outcome string
	}{
		{"another client", edge, "/envoy/l/a", []string{"X-Forwarded-For: 198.51.100.8"}, 200, authOK},
		{"untrusted peer", "192.0.2.9:1", "/envoy/l/a", []string{"X-Forwarded-For: 198.51.100.9"}, 403, authUntrusted},
		{"no X-Forwarded-For", edge, "/envoy/l/a", nil, 400, authMalformed},
		{"the client's X-Forwarded-Uri", edge, "/envoy/other", []string{"X-Forwarded-For: 198.51.100.9", "X-Forwarded-Method: GET", "X-Forwarded-Uri: /l/a"}, 200, authUnlimited},
		{"not canonical", edge, "/envoy/l//a", []string{"X-Forwarded-For: 198.51.100.9"}, 400, authMalformed},
		{"a path that only starts like the prefix", edge, "/envoyx/l/a", []string{"X-Forwarded-For: 198.51.100.9"}, 400, authMalformed},
		{"the prefix alone", edge, "/envoy", []string{"X-Forwarded-For: 198.51.100.9"}, 400, authMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := envoyHTTPAsks(s, tt.peer, "GET", tt.target, tt.headers...)
			if w.Code != tt.status || w.Header().Get(admitStatus) != tt.outcome {
				t.Errorf("got %d %s (%q), want %d %s", w.Code, w.Header().Get(admitStatus), w.Body.String(), tt.status, tt.outcome)
			}
		})
	}
	if w := authAsk(s, edge, caddyAsks("GET", "/l/a", "198.51.100.9")...); w.Code != http.StatusOK || w.Header().Get(admitStatus) != authOK {
		t.Errorf("a forward-auth request beside it: got %d %s, want 200 ok", w.Code, w.Header().Get(admitStatus))
	}
}

// TestExtAuthzDrains: once admit auth drains, gRPC health says not
// serving while Check still answers through --drain-delay, so that Envoy's
// health checks move calls elsewhere first.
func TestExtAuthzDrains(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}", "--drain-delay", "1s")
	c, conn := checkClient(t, r, nil)
	if v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:1")); v.code != codes.OK {
		t.Fatalf("before the drain: got %v, want OK", v.code)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	<-r.s.drainStarted
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: extAuthzServiceName})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health while draining: got %v, %v, want NOT_SERVING", resp.GetStatus(), err)
	}
	if v := check(t, c, envoyAsks("GET", "/l/a", "198.51.100.7:1")); v.code != codes.OK {
		t.Errorf("Check while draining: got %v, want OK", v.code)
	}
	if err := <-stopped; err != nil {
		t.Errorf("serve: got %v, want nil", err)
	}
}

// TestExtAuthzHopFields: fields about Envoy's hop to admit (Connection
// and what it names, Keep-Alive, Content-Length) are dropped before the
// request is judged, as a forward-auth request's are: the call is decided
// as the same call without them.
func TestExtAuthzHopFields(t *testing.T) {
	r := startAuth(t, "--trusted-proxy", "127.0.0.1/32", "--grpc-listen", "127.0.0.1:0", "--route", "link=GET /l/{id}")
	c, _ := checkClient(t, r, nil)
	v := check(t, c, envoyAsks("GET", "/l/abc", "198.51.100.7:40000", "connection: keep-alive", "keep-alive: timeout=5", "content-length: 0"))
	if v.code != codes.OK || v.outcome() != authOK {
		t.Errorf("with hop fields: got %v %s, want OK ok", v.code, v.outcome())
	}
}
