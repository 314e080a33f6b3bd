package rlsd

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/admitgo/admit/server/internal/ops"
)

const jsonRequest = `{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"198.51.100.7"}]}]}`

// postJSON posts body to addr's /json with contentType and returns the
// status and body.
func postJSON(t *testing.T, addr, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+"/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Timeout: testTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRLSJSON answers ShouldRateLimit over JSON on --http-listen,
// spending quota, only for a POST of application/json of bounded size,
// and only to the listener's own names.
func TestRLSJSON(t *testing.T) {
	s := startRLS(t, rlsTestConfig, "--http-listen", "127.0.0.1:0")
	for _, tc := range []struct {
		name, contentType, body string
		want                    int
		wantBody                string
	}{
		{"no content type", "", jsonRequest, 415, "application/json"},
		{"a form", "application/x-www-form-urlencoded", jsonRequest, 415, ""},
		{"text, as a page sends without a preflight", "text/plain", jsonRequest, 415, ""},
		{"not JSON", "application/json", "{", 400, ""},
		{"no domain", "application/json", `{"descriptors":[{"entries":[{"key":"a","value":"b"}]}]}`, 400, ""},
		{"too large", "application/json", `{"domain":"` + strings.Repeat("a", 300<<10) + `"}`, 413, ""},
		{"first", "application/json; charset=utf-8", jsonRequest, 200, `"limitRemaining":1`},
		{"second", "application/json", jsonRequest, 200, `"overallCode":"OK"`},
		{"third, over the limit", "application/json", jsonRequest, 429, `"overallCode":"OVER_LIMIT"`},
	} {
		code, body := postJSON(t, s.http, tc.contentType, tc.body)
		if code != tc.want || !strings.Contains(body, tc.wantBody) {
			t.Errorf("%s: got %d %q, want %d with %q", tc.name, code, body, tc.want, tc.wantBody)
		}
	}
	client := &http.Client{Timeout: testTimeout}
	if code, _ := hostAnswer(t, client, "http://"+s.http, s.http, "GET", "/json"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /json: got %d, want 405", code)
	}
	for _, path := range []string{"/json", "/healthcheck"} {
		if code, body := hostAnswer(t, client, "http://"+s.http, "rebind.attacker.example", "GET", path); code != http.StatusMisdirectedRequest {
			t.Errorf("%s, a rebound Host: got %d %q, want 421", path, code, body)
		}
	}
	if code, body := hostAnswer(t, client, "http://"+s.http, "localhost", "GET", "/healthcheck"); code != 200 || body != "OK" {
		t.Errorf("/healthcheck: got %d %q, want 200 OK", code, body)
	}
}

// TestRLSRlconfig prints the configuration in force as the reference's
// /rlconfig does, on the metrics listener.
func TestRLSRlconfig(t *testing.T) {
	s := startRLS(t, rlsTestConfig)
	code, body := hostAnswer(t, &http.Client{Timeout: testTimeout}, "http://"+s.metrics, "localhost", "GET", "/rlconfig")
	if want := "edge.remote_address: unit=MINUTE requests_per_unit=2, shadow_mode: false, quota_mode: false\n"; code != 200 || body != want {
		t.Errorf("got %d %q, want 200 %q", code, body, want)
	}
	if s.http != "" {
		t.Errorf("without --http-listen: got an HTTP listener on %s", s.http)
	}
}

// TestRLSHealthDrains turns /healthcheck, /healthz and the gRPC health
// service to not serving together once admit rls drains.
func TestRLSHealthDrains(t *testing.T) {
	tel, err := ops.NewTelemetry()
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	h := newHealthState()
	mux := metricsMux(tel, h, nil, nil)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String()
	}
	grpcStatus := func() healthpb.HealthCheckResponse_ServingStatus {
		r, err := h.grpc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "ratelimit"})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}
	if c, b := get("/healthcheck"); c != 200 || b != "OK" {
		t.Errorf("/healthcheck serving: got %d %q, want 200 OK", c, b)
	}
	if c, _ := get("/healthz"); c != 200 || grpcStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("serving: /healthz %d, gRPC %v; want 200, SERVING", c, grpcStatus())
	}
	h.drain()
	if c, b := get("/healthcheck"); c != 500 || b != "" {
		t.Errorf("/healthcheck draining: got %d %q, want 500 and no body, as the reference answers", c, b)
	}
	if c, _ := get("/healthz"); c != 503 || grpcStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("draining: /healthz %d, gRPC %v; want 503, NOT_SERVING", c, grpcStatus())
	}
}

// TestRLSReflection lists the rate limit service through server
// reflection, as grpcurl asks for it.
func TestRLSReflection(t *testing.T) {
	s := startRLS(t, rlsTestConfig)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	stream, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	if !strings.Contains(strings.Join(names, " "), serviceName) {
		t.Errorf("services: got %q, want %s among them", names, serviceName)
	}
}

// TestRLSOpsListenerHost: admit rls's metrics listener refuses a rebound
// Host on every route, as the proxy's does, and counts it.
func TestRLSOpsListenerHost(t *testing.T) {
	s := startRLS(t, rlsTestConfig, "--admin-host", "rls.internal")
	client := &http.Client{Timeout: testTimeout}
	base := "http://" + s.metrics
	routes := []struct{ method, path string }{{"GET", "/metrics"}, {"GET", "/healthz"}, {"GET", "/healthcheck"}, {"GET", "/rlconfig"}, {"GET", "/nowhere"}, {"POST", "/healthz"}}
	for _, rt := range routes {
		if code, body := hostAnswer(t, client, base, "rebind.attacker.example:9464", rt.method, rt.path); code != http.StatusMisdirectedRequest {
			t.Errorf("%s %s: got %d %q, want 421", rt.method, rt.path, code, body)
		}
	}
	for _, host := range []string{s.metrics, "[::1]:9464", "localhost", "probe.localhost", "RLS.internal."} {
		if code, body := hostAnswer(t, client, base, host, "GET", "/healthz"); code != http.StatusOK {
			t.Errorf("GET /healthz, Host %q: got %d %q, want 200", host, code, body)
		}
	}
	if got := metricValue(s.scrape(t), `admit_server_misdirected_total{admit_server_listener="metrics"`); got != len(routes) {
		t.Errorf("admit_server_misdirected_total: got %d, want %d", got, len(routes))
	}
}

// TestRLSLifecycleLogged names each listener's address by its flag once
// serving, and drains under --drain-timeout, saying so, as the proxy does.
func TestRLSLifecycleLogged(t *testing.T) {
	config := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(config, []byte(rlsTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"--grpc-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--config", config, "--drain-timeout", "250ms"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.ready = func(addresses) { cancel() }
	var out strings.Builder // written by serve's goroutine alone, read once it returned
	if err := serve(ctx, o, nil, slog.New(slog.NewTextHandler(&out, nil))); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="admit rls: serving" grpc_listen=127.0.0.1:`, ` metrics_listen=127.0.0.1:`, ` http_listen=""`,
		`msg="admit rls: draining" timeout=250ms`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, out.String())
		}
	}
}
