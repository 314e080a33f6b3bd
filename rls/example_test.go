package rls_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admitgo/admit/rls"
)

// Example decides two requests of a client under envoyproxy/ratelimit's
// configuration, in memory.
func Example() {
	cfg, err := rls.Parse("edge.yaml", []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 1
`))
	if err != nil {
		panic(err)
	}
	svc, err := rls.New(rls.Options{Config: cfg})
	if err != nil {
		panic(err)
	}
	req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.7"}}},
	}}
	for range 2 {
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.GetOverallCode())
	}
	// Serving it to Envoy: mount the handler on an HTTP/2 server.
	mux := http.NewServeMux()
	mux.Handle(rls.Procedure, svc.Handler())
	// Output:
	// OK
	// OVER_LIMIT
}

// Example_tokenBucket decides with admit's token bucket, an extension the
// reference refuses: two tokens a minute, one every 30 seconds, and at
// most three at once. Each answer says the tokens left and the seconds
// until the bucket is full again.
func Example_tokenBucket() {
	cfg, err := rls.Parse("edge.yaml", []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 2
      algorithm: token-bucket
      burst: 3
`))
	if err != nil {
		panic(err)
	}
	svc, err := rls.New(rls.Options{Config: cfg})
	if err != nil {
		panic(err)
	}
	req := &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.7"}}},
	}}
	for range 4 {
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			panic(err)
		}
		st := resp.GetStatuses()[0]
		fmt.Println(st.GetCode(), st.GetLimitRemaining(), st.GetDurationUntilReset().GetSeconds())
	}
	// Output:
	// OK 2 30
	// OK 1 60
	// OK 0 90
	// OVER_LIMIT 0 90
}

// ExampleService_JSONHandler answers envoyproxy/ratelimit's /json, and
// prints the configuration as its /rlconfig does.
func ExampleService_JSONHandler() {
	cfg, err := rls.Parse("edge.yaml", []byte(`
domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 1
`))
	if err != nil {
		panic(err)
	}
	svc, err := rls.New(rls.Options{Config: cfg})
	if err != nil {
		panic(err)
	}
	fmt.Print(svc.Config().Dump())
	h := svc.JSONHandler()
	for _, contentType := range []string{"text/plain", "application/json", "application/json"} {
		req := httptest.NewRequest("POST", "/json", strings.NewReader(`{"domain":"edge","descriptors":[{"entries":[{"key":"remote_address","value":"192.0.2.7"}]}]}`))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(contentType, rec.Code)
	}
	// Output:
	// edge.remote_address: unit=HOUR requests_per_unit=1, shadow_mode: false, quota_mode: false
	// text/plain 415
	// application/json 200
	// application/json 429
}
