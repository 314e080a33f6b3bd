package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
)

// fixed is a checker that always gives the same answer.
type fixed struct {
	status grpchealth.Status
	err    error
}

func (f fixed) Check(context.Context, *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &grpchealth.CheckResponse{Status: f.status}, nil
}

func TestHandler(t *testing.T) {
	static := grpchealth.NewStaticChecker("db")
	static.SetStatus("db", grpchealth.StatusNotServing)
	tests := []struct {
		name    string
		checker grpchealth.Checker
		method  string
		target  string
		code    int
		body    string
	}{
		{"serving", fixed{status: grpchealth.StatusServing}, "GET", "/healthz", 200, "serving\n"},
		{"not serving", fixed{status: grpchealth.StatusNotServing}, "GET", "/healthz", 503, "not_serving\n"},
		{"unknown", fixed{status: grpchealth.StatusUnknown}, "GET", "/healthz", 503, "unknown\n"},
		{"out of range status", fixed{status: 9}, "GET", "/healthz", 503, "unknown\n"},
		{"head serving", fixed{status: grpchealth.StatusServing}, "HEAD", "/healthz", 200, ""},
		{"head not serving", fixed{status: grpchealth.StatusNotServing}, "HEAD", "/healthz", 503, ""},
		{"checker error", fixed{err: errors.New("upstream: dial tcp 10.0.0.7:80: refused")}, "GET", "/healthz", 503, "unknown\n"},
		{"named service", static, "GET", "/healthz?service=db", 503, "not_serving\n"},
		{"empty service name", static, "GET", "/healthz?service=", 200, "serving\n"},
		{"other parameters ignored", static, "GET", "/healthz?verbose=1", 200, "serving\n"},
		{"unknown service", static, "GET", "/healthz?service=nope", 404, "unknown service\n"},
		{"bad query", static, "GET", "/healthz?service=%zz", 400, "bad query\n"},
		{"post refused", static, "POST", "/healthz", 405, "method not allowed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Handler(tt.checker).ServeHTTP(w, httptest.NewRequest(tt.method, tt.target, nil))
			if w.Code != tt.code {
				t.Errorf("code: got %v, want %v", w.Code, tt.code)
			}
			if got := w.Body.String(); got != tt.body {
				t.Errorf("body: got %q, want %q", got, tt.body)
			}
			if got, want := w.Header().Get("Cache-Control"), "no-store"; got != want {
				t.Errorf("Cache-Control: got %q, want %q", got, want)
			}
			if tt.code == 405 {
				if got, want := w.Header().Get("Allow"), "GET, HEAD"; got != want {
					t.Errorf("Allow: got %q, want %q", got, want)
				}
			}
		})
	}
}

func TestHandlerHeadMatchesGet(t *testing.T) {
	srv := httptest.NewServer(Handler(fixed{status: grpchealth.StatusNotServing}))
	defer srv.Close()
	lengths := map[string]int64{}
	for _, method := range []string{"GET", "HEAD"} {
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL+"/healthz", nil)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		lengths[method] = res.ContentLength
	}
	if lengths["HEAD"] != lengths["GET"] {
		t.Errorf("Content-Length of HEAD: got %v, want %v", lengths["HEAD"], lengths["GET"])
	}
}

func TestHandlerAllocs(t *testing.T) {
	tests := []struct {
		name    string
		checker grpchealth.Checker
	}{
		{"direct", fixed{status: grpchealth.StatusServing}},
		{"cached", Cached(fixed{status: grpchealth.StatusServing}, nil, time.Hour, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Handler(tt.checker)
			req := httptest.NewRequest("GET", "/healthz", nil)
			w := &discard{h: http.Header{}}
			got := testing.AllocsPerRun(100, func() {
				clear(w.h)
				h.ServeHTTP(w, req)
			})
			// The check request and the checker's response; header values
			// are prepared once.
			if want := 2.0; got > want {
				t.Errorf("allocs per request: got %v, want at most %v", got, want)
			}
		})
	}
}

// discard is a ResponseWriter that keeps nothing but the headers.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }

// TestGRPCHealthThroughCache serves the gRPC/Connect health service over a
// cached checker, as the server does, and checks that probes over the wire get
// the cached status, and a drain at once.
func TestGRPCHealthThroughCache(t *testing.T) {
	inner := &counter{}
	inner.set(grpchealth.StatusServing)
	clk := newClock()
	var draining atomic.Bool
	c := Cached(inner, draining.Load, time.Second, clk.Now)

	mux := http.NewServeMux()
	mux.Handle(grpchealth.NewHandler(c))
	mux.Handle("GET /healthz", Handler(c))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	protocols := []struct {
		name string
		opts []connect.ClientOption
	}{
		{"connect", nil},
		{"grpc", []connect.ClientOption{connect.WithGRPC()}},
		{"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}},
	}
	probe := func(t *testing.T, want grpchealth.Status) {
		t.Helper()
		for _, p := range protocols {
			client := grpchealth.NewClient(srv.Client(), srv.URL, p.opts...)
			res, err := client.Check(t.Context(), &grpchealth.CheckRequest{})
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			if res.Status != want {
				t.Errorf("%s: got %v, want %v", p.name, res.Status, want)
			}
		}
		res, err := srv.Client().Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if wantCode := map[bool]int{true: 200, false: 503}[want == grpchealth.StatusServing]; res.StatusCode != wantCode {
			t.Errorf("/healthz: got %v, want %v", res.StatusCode, wantCode)
		}
	}

	probe(t, grpchealth.StatusServing)
	inner.set(grpchealth.StatusNotServing)
	probe(t, grpchealth.StatusServing) // still cached
	if got, want := inner.count(""), int64(1); got != want {
		t.Errorf("inner calls: got %v, want %v", got, want)
	}
	draining.Store(true)
	probe(t, grpchealth.StatusNotServing)
	draining.Store(false)
	clk.Advance(time.Second)
	probe(t, grpchealth.StatusNotServing)
	if got, want := inner.count(""), int64(2); got != want {
		t.Errorf("inner calls: got %v, want %v", got, want)
	}

}
