package server_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admitgo/admit/server"
)

// The proxy embedded in a Go program, from the configuration file the admit
// command reads: an API route limited to a burst of 2 per client, in front
// of an app.
func Example() {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the app")
	}))
	defer app.Close()
	dir, err := os.MkdirTemp("", "admit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "admit.yaml")
	yaml := `
budgets:
  api: {rate: 1, burst: 2}
routes:
  - {group: api, pattern: "GET /api/{item}"}
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		log.Fatal(err)
	}

	cfg, err := server.Load([]string{"--config", file, "--upstream", app.URL}, nil)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	// srv.Serve(ctx) would listen on --listen and --metrics-listen; here the
	// handler answers in-process.
	for range 3 {
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/api/42", nil))
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// 200 hello from the app
	// 200 hello from the app
	// 429 Too Many Requests: limit "api"
}

// TestServeOnce: a Server serves once, and New takes only a Config from
// Load.
func TestServeOnce(t *testing.T) {
	if _, err := server.New(t.Context(), &server.Config{}, nil); err == nil {
		t.Error("New of a Config not from Load: got nil error")
	}
	cfg, err := server.Load([]string{"--demo", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // serve, then drain at once
	if err := srv.Serve(ctx); err != nil {
		t.Fatalf("first Serve: %v", err)
	}
	if err := srv.Serve(ctx); err == nil || !strings.Contains(err.Error(), "served already") {
		t.Errorf("second Serve: got %v, want an error saying it served already", err)
	}
}
