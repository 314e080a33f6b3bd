package health_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"connectrpc.com/grpchealth"
	"github.com/admitgo/admit/health"
)

// A server answers probes from a one-second cache of its upstream's health,
// on /healthz and on the gRPC/Connect health service, and reports NOT_SERVING
// as soon as it starts draining.
func ExampleCached() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer upstream.Close()

	probe, err := health.HTTP(nil, upstream.URL+"/ready")
	if err != nil {
		panic(err)
	}
	var draining atomic.Bool
	checker := health.Cached(probe, draining.Load, time.Second, nil)

	mux := http.NewServeMux()
	mux.Handle("GET /healthz", health.Handler(checker))
	mux.Handle(grpchealth.NewHandler(checker))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func() {
		res, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		fmt.Printf("%d %s", res.StatusCode, body)
	}
	get()
	draining.Store(true)
	get()
	// Output:
	// 200 serving
	// 503 not_serving
}

// Without an upstream to probe, a static checker from grpchealth serves
// while the process runs.
func ExampleHandler() {
	checker := health.Cached(grpchealth.NewStaticChecker(), nil, 0, nil)
	w := httptest.NewRecorder()
	health.Handler(checker).ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
	fmt.Print(w.Code, " ", w.Body.String())
	// Output: 200 serving
}
