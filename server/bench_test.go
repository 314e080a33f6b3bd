package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admitgo/admit/server/internal/config"
)

// roundTrip answers every request at once, without a network: the benchmarks
// measure admit's own work.
type roundTrip struct{}

func (roundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader("ok\n")),
		ContentLength: 3, Request: r}, nil
}

// BenchmarkHandler serves requests through the server's routes with an
// upstream that costs nothing: a path in no group, a link route whose budget
// admits everything, a link route whose client is far over budget, and the
// last two again with an access log.
func BenchmarkHandler(b *testing.B) {
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	allowed := []string{"--upstream", up.URL, "--route", "link=GET /l/{id}", "--config", "testdata/bench-allowed.yaml"}
	limited := []string{"--upstream", up.URL, "--route", "link=GET /l/{id}"}
	log := []string{"--access-log", filepath.Join(b.TempDir(), "access.log")}
	tests := []struct {
		name, path string
		args       []string
		want       int
	}{
		{"unlimited", "/u/x", allowed, http.StatusOK},
		{"allowed", "/l/x", allowed, http.StatusOK},
		{"rejected", "/l/x", limited, http.StatusTooManyRequests},
		{"allowed, logged", "/l/x", append(log, allowed...), http.StatusOK},
		{"rejected, logged", "/l/x", append(log, limited...), http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			cfg, err := config.Parse(append(tt.args, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"), func(string) string { return "" }, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			cfg.Now, cfg.Transport = frozen(), roundTrip{}
			s, err := newServer(b.Context(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			req := httptest.NewRequest("GET", tt.path, nil)
			req.RemoteAddr = "192.0.2.1:1234"
			for range 30 { // spend the burst of the limited budget
				s.handler.ServeHTTP(httptest.NewRecorder(), req)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.handler.ServeHTTP(w, req)
				if w.Code != tt.want {
					b.Fatalf("got %d, want %d", w.Code, tt.want)
				}
			}
		})
	}
}
