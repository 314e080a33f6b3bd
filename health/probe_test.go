package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
)

func TestHTTP(t *testing.T) {
	upstream := http.NewServeMux()
	upstream.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) {
		if got, want := r.Header.Get("User-Agent"), userAgent; got != want {
			t.Errorf("User-Agent: got %q, want %q", got, want)
		}
		w.Write([]byte(strings.Repeat("x", 1<<20)))
	})
	upstream.HandleFunc("GET /created", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })
	upstream.HandleFunc("GET /down", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	upstream.HandleFunc("GET /missing", http.NotFound)
	upstream.HandleFunc("GET /moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok", http.StatusFound)
	})
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	closed := httptest.NewServer(upstream)
	closed.Close()

	tests := []struct {
		name    string
		url     string
		service string
		want    grpchealth.Status
	}{
		{"2xx serves", srv.URL + "/ok", "", grpchealth.StatusServing},
		{"any 2xx serves", srv.URL + "/created", "", grpchealth.StatusServing},
		{"5xx does not", srv.URL + "/down", "", grpchealth.StatusNotServing},
		{"4xx does not", srv.URL + "/missing", "", grpchealth.StatusNotServing},
		{"redirect is not followed", srv.URL + "/moved", "", grpchealth.StatusNotServing},
		{"refused connection does not", closed.URL + "/ok", "", grpchealth.StatusNotServing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checker, err := HTTP(nil, tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := check(t, checker, tt.service); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHTTPUnknownService(t *testing.T) {
	checker, err := HTTP(nil, "http://127.0.0.1:1/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_, err = checker.Check(t.Context(), &grpchealth.CheckRequest{Service: "db"})
	if got, want := connect.CodeOf(err), connect.CodeNotFound; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)

	client := &http.Client{Timeout: time.Millisecond}
	checker, err := HTTP(client, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := check(t, checker, ""), grpchealth.StatusNotServing; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestHTTPCallerGone(t *testing.T) {
	checker, err := HTTP(nil, "http://127.0.0.1:1/healthz")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// A caller that went away learns so from the error, so Cached does not
	// store its cut-short probe as the upstream's status.
	if _, err := checker.Check(ctx, &grpchealth.CheckRequest{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want %v", err, context.Canceled)
	}
}

func TestHTTPBadURL(t *testing.T) {
	tests := []struct {
		name string
		url  string
		want string
	}{
		{"empty", "", `health: probe URL "": `},
		{"no scheme", "localhost:8080/healthz", `health: probe URL "localhost:8080/healthz": `},
		{"other scheme", "ftp://example.com/", `health: probe URL "ftp://example.com/": `},
		{"no host", "http:///healthz", `health: probe URL "http:///healthz": `},
		{"unparsable", "http://[::1/", `health: probe URL "http://[::1/": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := HTTP(nil, tt.url)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v, want an error starting %q", err, tt.want)
			}
		})
	}
}
