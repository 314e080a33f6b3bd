package rlsd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/admitgo/admit/internal/testcert"
	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/server/internal/config"
)

const rlsTestConfig = `domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 2
`

// rlsServer is a running admit rls.
type rlsServer struct {
	addr, metrics string
	http          string // empty without --http-listen
	hangups       chan os.Signal
	config        string
}

// startRLS runs admit rls with args on loopback ports, its configuration
// file written from yaml, until t ends.
func startRLS(t *testing.T, yaml string, args ...string) *rlsServer {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "edge.yaml")
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags(append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--config", config}, args...), func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, o)
}

// client dials s as Envoy's rate limit cluster does: HTTP/2, cleartext or
// TLS trusting roots.
func (s *rlsServer) client(t *testing.T, roots *x509.CertPool) pb.RateLimitServiceClient {
	t.Helper()
	creds := insecure.NewCredentials()
	if roots != nil {
		creds = credentials.NewTLS(&tls.Config{RootCAs: roots})
	}
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: serviceName})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", h, err)
	}
	return pb.NewRateLimitServiceClient(conn)
}

// envoyRequest is what Envoy's HTTP filter sends for a route with a
// remote_address action: the domain, one descriptor, no hits_addend.
func envoyRequest(addr string) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: addr}}},
	}}
}

// codes sends n requests for addr and returns their overall codes.
func codesOf(t *testing.T, c pb.RateLimitServiceClient, addr string, n int) []pb.RateLimitResponse_Code {
	t.Helper()
	var out []pb.RateLimitResponse_Code
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.ShouldRateLimit(ctx, envoyRequest(addr))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.GetOverallCode())
	}
	return out
}

func wantCodes(t *testing.T, got []pb.RateLimitResponse_Code, want ...pb.RateLimitResponse_Code) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("codes %v, want %v", got, want)
		}
	}
}

const (
	ok   = pb.RateLimitResponse_OK
	over = pb.RateLimitResponse_OVER_LIMIT
)

// TestRLSClients calls admit rls with grpc-go over h2c and over TLS.
func TestRLSClients(t *testing.T) {
	t.Run("h2c", func(t *testing.T) {
		s := startRLS(t, rlsTestConfig)
		wantCodes(t, codesOf(t, s.client(t, nil), "10.0.0.1", 3), ok, ok, over)
	})
	t.Run("tls", func(t *testing.T) {
		cert, key, roots := testcert.SelfSigned(t)
		s := startRLS(t, rlsTestConfig, "--tls-cert", cert, "--tls-key", key)
		wantCodes(t, codesOf(t, s.client(t, roots), "10.0.0.1", 3), ok, ok, over)
	})
	t.Run("malformed", func(t *testing.T) {
		s := startRLS(t, rlsTestConfig)
		_, err := s.client(t, nil).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "edge"})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("no descriptors: got %v, want InvalidArgument", err)
		}
	})
}

// TestRLSReload reloads on SIGHUP and on a change of the file, and keeps
// the configuration when the new one is refused.
func TestRLSReload(t *testing.T) {
	s := startRLS(t, rlsTestConfig)
	c := s.client(t, nil)
	wantCodes(t, codesOf(t, c, "a", 3), ok, ok, over)
	// A refused file keeps the old configuration.
	if err := os.WriteFile(s.config, []byte("domain: edge\ndescriptors:\n  - key: x\n    rate_limit: {unit: fortnight}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.hangups <- syscall.SIGHUP
	wantCodes(t, codesOf(t, c, "b", 3), ok, ok, over)
	// A change of the file reloads without a signal.
	if err := os.WriteFile(s.config, []byte(strings.Replace(rlsTestConfig, "requests_per_unit: 2", "requests_per_unit: 1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := codesOf(t, c, "c"+time.Now().String(), 2)
		if got[1] == over {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the changed file was not loaded within 5s")
		}
	}
}

// TestRLSBadConfig exits 2 with the file, line and field named.
func TestRLSBadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte("domain: edge\ndescriptors:\n  - key: x\n    rate_limit: {unit: fortnight}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", path}, "bad.yaml:4:"},
		{[]string{"--config", path, "--store-fail", "maybe"}, `--store-fail "maybe"`},
		{[]string{}, "--config is required"},
		{[]string{"--config", path, "--tls-cert", "c.pem"}, "--tls-cert is set but --tls-key (ADMIT_RLS_TLS_KEY) is not"},
		{[]string{"--config", path, "--store", "mongodb://x"}, "--store"},
	} {
		err := Run(context.Background(), append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, tc.args...), func(string) string { return "" }, io.Discard, io.Discard)
		var uerr config.UsageError
		if !errors.As(err, &uerr) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: got %v, want a usage error (exit 2) holding %q", tc.args, err, tc.want)
		}
	}
}

// TestRLSStoreOutage stops the Redis under admit rls and wants each
// --store-fail's answer.
func TestRLSStoreOutage(t *testing.T) {
	for _, tc := range []struct {
		fail string
		want pb.RateLimitResponse_Code
		code codes.Code
	}{
		{"error", 0, codes.Unavailable},
		{"closed", over, codes.OK},
		{"open", ok, codes.OK},
		{"local", ok, codes.OK},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			redis := testserver.Redis(t)
			s := startRLS(t, rlsTestConfig, "--store", redis.URL, "--store-fail", tc.fail)
			c := s.client(t, nil)
			wantCodes(t, codesOf(t, c, "a", 1), ok)
			redis.Stop()
			resp, err := c.ShouldRateLimit(context.Background(), envoyRequest("a"))
			if status.Code(err) != tc.code {
				t.Fatalf("with Redis down: got %v, want %v", err, tc.code)
			}
			if err == nil && resp.GetOverallCode() != tc.want {
				t.Fatalf("with Redis down: got %v, want %v", resp.GetOverallCode(), tc.want)
			}
			if tc.fail == "local" {
				// The fallback counts from nothing: two more pass, then it refuses.
				wantCodes(t, codesOf(t, c, "a", 2), ok, over)
			}
		})
	}
}

// rlsBucketConfig is one token bucket, admit's extension: two tokens that
// refill one an hour, so that no refill falls inside the test.
const rlsBucketConfig = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: token-bucket, burst: 2}
`

// TestRLSTokenBucketsShareTheStore runs two admit rls on one shared store
// with a token bucket: what one spends, the other sees, so the buckets are
// decided on the store and not in either process.
func TestRLSTokenBucketsShareTheStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"redis", func(t *testing.T) []string {
			return []string{"--store", testredis.URL(), "--store-prefix", testredis.Prefix(t)}
		}},
		{"redis, batch_script=on", func(t *testing.T) []string {
			return []string{"--store", withQuery(testredis.URL(), "batch_script=on"), "--store-prefix", testredis.Prefix(t)}
		}},
		{"postgres", func(t *testing.T) []string {
			db := testpg.New(t)
			return []string{"--store", testpg.URL(), "--store-table", db.Schema + ".admit_quota"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.store(t)
			a, b := startRLS(t, rlsBucketConfig, store...), startRLS(t, rlsBucketConfig, store...)
			wantCodes(t, codesOf(t, a.client(t, nil), "10.0.0.1", 2), ok, ok)
			wantCodes(t, codesOf(t, b.client(t, nil), "10.0.0.1", 1), over)
			wantCodes(t, codesOf(t, b.client(t, nil), "10.0.0.2", 1), ok)
		})
	}
}

// scrape returns the metrics admit rls serves.
func (s *rlsServer) scrape(t *testing.T) string {
	t.Helper()
	return s.get(t, "/metrics")
}

// get returns the body of path on the metrics listener.
func (s *rlsServer) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.metrics + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRLSAdminHostRefused: a name that is not one stops admit rls, in
// the words of the flag or variable that gave it.
func TestRLSAdminHostRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--admin-host", "rls.internal:9464"}, nil, `admit rls: --admin-host "rls.internal:9464": want host names`},
		{nil, map[string]string{"ADMIT_RLS_ADMIN_HOST": "ok.example *.example"}, `admit rls: ADMIT_RLS_ADMIN_HOST "ok.example *.example": "*.example": want host names`},
	} {
		_, err := parseFlags(append([]string{"--config", "x.yaml"}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v %v: got %v, want %s...", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestRLSMaxConns closes a connection past --max-conns on arrival, and
// counts it, while the connection within the cap keeps being served.
func TestRLSMaxConns(t *testing.T) {
	s := startRLS(t, rlsTestConfig, "--max-conns", "1")
	c := s.client(t, nil) // the one connection the cap allows, open
	extra, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("a connection past --max-conns: read %d, %v; want it closed", n, err)
	}
	wantCodes(t, codesOf(t, c, "10.0.0.1", 1), ok)
	if got := metricValue(s.scrape(t), `admit_server_connections_refused_total{admit_server_listener="rls",admit_server_reason="max_conns",`); got != 1 {
		t.Errorf("connections of listener rls refused: got %v, want 1", got)
	}
}

// TestRLSMaxConnsPerClient closes a client's connection past
// --max-conns-per-client on arrival, and counts it, while another client's
// connections are served.
func TestRLSMaxConnsPerClient(t *testing.T) {
	s := startRLS(t, rlsTestConfig, "--max-conns-per-client", "1")
	first := dialFrom(t, "127.0.0.2", s.addr) // the one connection 127.0.0.2 may keep
	defer first.Close()
	// The listener places a connection when its server goroutine first
	// asks for it, and grpc-go sends its SETTINGS frame after that: read
	// it, so that the next connection cannot take first's place.
	first.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(first, make([]byte, 9)); err != nil {
		t.Fatalf("the client's first connection: %v; want it served", err)
	}
	extra := dialFrom(t, "127.0.0.2", s.addr)
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("a second connection from one client: read %d, %v; want it closed", n, err)
	}
	wantCodes(t, codesOf(t, s.client(t, nil), "10.0.0.1", 1), ok) // from 127.0.0.1
	if got := metricValue(s.scrape(t), `admit_server_connections_refused_total{admit_server_listener="rls",admit_server_reason="max_conns_per_client",`); got != 1 {
		t.Errorf("connections of listener rls refused per client: got %v, want 1", got)
	}
}

// TestRLSStoreMetrics serves the shared store's own metrics on /metrics,
// as the proxy does.
func TestRLSStoreMetrics(t *testing.T) {
	s := startRLS(t, rlsBucketConfig, "--store", testredis.URL(), "--store-prefix", testredis.Prefix(t))
	wantCodes(t, codesOf(t, s.client(t, nil), "10.0.0.1", 1), ok)
	if got := metricValue(s.scrape(t), `admit_quota_decisions_total{admit_quota_outcome="allowed",admit_quota_store="redis",`); got != 1 {
		t.Errorf("the Redis store's allowed decisions: got %v, want 1", got)
	}
}

// TestRLSEnvironment reads each flag not given from ADMIT_RLS_ and its
// name; the flag wins, an error names the variable, and the proxy's
// ADMIT_ variables and envoyproxy/ratelimit's are not read, the latter
// reported.
func TestRLSEnvironment(t *testing.T) {
	env := map[string]string{"ADMIT_RLS_CONFIG": "edge.yaml", "ADMIT_RLS_MAX_CONNS": "7", "ADMIT_RLS_MAX_CONNS_PER_CLIENT": "3", "ADMIT_RLS_STORE_FAIL": "open",
		"ADMIT_RLS_LISTEN": "127.0.0.1:9", "ADMIT_RLS_SHADOW": "true", "ADMIT_TLS_CERT": "proxy.pem", "REDIS_URL": "redis:6379"}
	o, err := parseFlags([]string{"--listen", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Config != "edge.yaml" || o.MaxConns != 7 || o.MaxConnsPerClient != 3 || o.StoreFail.String() != "open" || !o.Shadow || o.GRPCListen != "127.0.0.1:0" || o.TLSCert != "" {
		t.Errorf("got config %q, max-conns %d, max-conns-per-client %d, store-fail %v, shadow %v, listen %q, tls-cert %q; want the ADMIT_RLS_ variables, the flag's listen, no proxy's variable",
			o.Config, o.MaxConns, o.MaxConnsPerClient, o.StoreFail, o.Shadow, o.GRPCListen, o.TLSCert)
	}
	if !slices.Equal(o.referenceEnv, []string{"REDIS_URL"}) {
		t.Errorf("reference variables reported: got %q, want REDIS_URL", o.referenceEnv)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"ADMIT_RLS_MAX_CONNS", "0", `admit rls: ADMIT_RLS_MAX_CONNS 0: must be at least 1`},
		{"ADMIT_RLS_MAX_CONNS", "many", `admit rls: ADMIT_RLS_MAX_CONNS "many": not a whole number`},
		{"ADMIT_RLS_MAX_CONNS_PER_CLIENT", "-1", `admit rls: ADMIT_RLS_MAX_CONNS_PER_CLIENT -1: must be 0 (no cap) or more`},
		{"ADMIT_RLS_SHADOW", "yes", `admit rls: ADMIT_RLS_SHADOW "yes": not a boolean (use true or false)`},
		{"ADMIT_RLS_STORE", "redis://:s3cret@cache:port", `admit rls: ADMIT_RLS_STORE "redis://(not shown: not a valid URL)": not a valid URL`},
		{"ADMIT_RLS_STORE_FAIL", "maybe", `admit rls: ADMIT_RLS_STORE_FAIL "maybe": want error, closed, open or local`},
		{"ADMIT_RLS_TLS_CERT", "c.pem", `admit rls: ADMIT_RLS_TLS_CERT is set but --tls-key (ADMIT_RLS_TLS_KEY) is not: give both or neither`},
	} {
		env := map[string]string{"ADMIT_RLS_CONFIG": "edge.yaml", tc.name: tc.value}
		_, err := parseFlags(nil, func(k string) string { return env[k] }, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s=%s: got %v, want an error starting %q", tc.name, tc.value, err, tc.want)
		}
	}
}

// TestRLSUsageNamesTheVariables prints each flag of admit rls -h with its
// environment variable, as the proxy's -h does.
func TestRLSUsageNamesTheVariables(t *testing.T) {
	var out strings.Builder
	if _, err := parseFlags([]string{"-h"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: admit rls --config FILE|DIR [flags]", "admit rls validate --config FILE|DIR", "--store STORE\n", "env ADMIT_RLS_STORE;", "--max-conns N\n", "env ADMIT_RLS_MAX_CONNS;", "--shadow\n", "(env ADMIT_RLS_SHADOW; default \"false\")"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRLSNearLimitRatioCounts hands --near-limit-ratio to the service:
// of six hits on a limit of ten, the sixth is near the limit at 0.5, and
// none is at the default 0.8.
func TestRLSNearLimitRatioCounts(t *testing.T) {
	const config = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 10}
`
	const near = `admit_rls_hits_total{admit_rls_limit="edge.remote_address",admit_rls_outcome="near_limit",`
	for _, tc := range []struct {
		args []string
		want int
	}{{nil, -1}, {[]string{"--near-limit-ratio", "0.5"}, 1}} {
		s := startRLS(t, config, tc.args...)
		codesOf(t, s.client(t, nil), "10.0.0.1", 6)
		if got := metricValue(s.scrape(t), near); got != tc.want {
			t.Errorf("%v: near_limit hits %d, want %d (-1: none)", tc.args, got, tc.want)
		}
	}
}

// rlsPerSecondConfig limits each address to 5 a second and each user to
// 5 a minute.
const rlsPerSecondConfig = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 5}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5}
`

// TestRLSPerSecondStore counts the limits of a second on --per-second-store
// (Redis) and the others on --store (PostgreSQL): a call limited per second
// writes a key on Redis and no row, one limited per minute a row and no
// key.
func TestRLSPerSecondStore(t *testing.T) {
	db := testpg.New(t)
	prefix := testredis.Prefix(t)
	s := startRLS(t, rlsPerSecondConfig, "--store", testpg.URL(), "--store-table", db.Schema+".admit_quota",
		"--per-second-store", testredis.URL(), "--store-prefix", prefix)
	c := s.client(t, nil)
	redisKeys := func() int {
		keys, err := testredis.Client(t).Keys(context.Background(), prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	rows := func() int {
		var n int
		if err := db.Pool(t).QueryRow(context.Background(), "SELECT count(*) FROM "+db.Schema+".admit_quota").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ask := func(key, value string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: key, Value: value}}}}})
		if err != nil || resp.GetOverallCode() != ok {
			t.Fatalf("%s %s: got %v, %v; want OK", key, value, resp.GetOverallCode(), err)
		}
	}
	ask("remote_address", "10.0.0.1")
	if k, r := redisKeys(), rows(); k != 1 || r != 0 {
		t.Errorf("after a per-second call: %d Redis keys, %d rows; want 1, 0", k, r)
	}
	ask("user", "ann")
	if k, r := redisKeys(), rows(); k != 1 || r != 1 {
		t.Errorf("after a per-minute call: %d Redis keys, %d rows; want 1, 1", k, r)
	}
}

// TestRLSPerSecondStoreRefused: memory as the per-second store, which
// would count nothing apart, and a Redis that refuses the connection stop
// startup in the words of the flag that named them.
func TestRLSPerSecondStoreRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(file, []byte(rlsPerSecondConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ store, want string }{
		{"memory", `admit rls: --per-second-store "memory": want a postgres://, redis:// or memcache:// URL`},
		{"redis://" + testredis.Options(t).Addr + "/99", `admit rls: --per-second-store "redis://` + testredis.Options(t).Addr + `/99": Redis refuses the connection`},
	} {
		err := Run(context.Background(), []string{"--config", file, "--grpc-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--per-second-store", tc.store},
			func(string) string { return "" }, io.Discard, io.Discard)
		if code := config.ExitCode(err); code != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--per-second-store %s: exit %d, %v; want exit 2 and %q", tc.store, code, err, tc.want)
		}
	}
}
