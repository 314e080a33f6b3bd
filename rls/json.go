package rls

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"connectrpc.com/connect"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// JSONHandler returns envoyproxy/ratelimit's /json: a ShouldRateLimit
// over HTTP/1.1 for clients that cannot speak gRPC, its request and answer
// in protojson. It spends quota as a gRPC call does and answers 200, 429
// for OVER_LIMIT, or 500 for UNKNOWN, as the reference does. Unlike the
// reference it takes only a POST whose Content-Type is application/json
// (415 otherwise), which a web page cannot send to another site without
// the browser asking first, and at most [MaxRequestBytes] (413).
func (s *Service) JSONHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "rls: /json takes POST", http.StatusMethodNotAllowed)
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			http.Error(w, "rls: /json takes Content-Type application/json", http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, "rls: request larger than 256 KiB", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "rls: reading the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		var req pb.RateLimitRequest
		if err := protojson.Unmarshal(body, &req); err != nil {
			http.Error(w, "rls: request: "+err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := s.ShouldRateLimit(r.Context(), &req)
		if err != nil {
			http.Error(w, err.Error(), jsonStatus(err))
			return
		}
		out, err := protojson.Marshal(resp)
		if err != nil {
			http.Error(w, "rls: answer: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		switch resp.GetOverallCode() {
		case pb.RateLimitResponse_OVER_LIMIT:
			w.WriteHeader(http.StatusTooManyRequests)
		case pb.RateLimitResponse_UNKNOWN:
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write(out)
	})
}

// jsonStatus is the HTTP status of an error of ShouldRateLimit: a
// malformed request, a store that cannot count (under --store-fail
// error), or the service's own failure.
func jsonStatus(err error) int {
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument:
		return http.StatusBadRequest
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
