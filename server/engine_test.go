package server

import (
	"net/http"
	"testing"

	"github.com/admitgo/admit/internal/upstream"
)

// TestHTTPEngine: --http-engine net/http serves the proxy's listener with
// net/http's server alone and forwards with a Transport alone, under
// admit's bound on response heads; admit's engine and direct path are the
// default.
func TestHTTPEngine(t *testing.T) {
	app := upstreamApp(t)
	for _, tc := range []struct {
		engine string
		own    bool // admit's engine and direct path
	}{{"admit", true}, {"net/http", false}} {
		t.Run(tc.engine, func(t *testing.T) {
			r := start(t, "--upstream", app.URL, "--http-engine", tc.engine)
			if got := r.s.h1Engine(&http.Server{}) != nil; got != tc.own {
				t.Errorf("h1 engine on the proxy's listener: got %v, want %v", got, tc.own)
			}
			p := r.s.proxy.(*proxy)
			if got := p.direct != nil; got != tc.own {
				t.Errorf("direct upstream path: got %v, want %v", got, tc.own)
			}
			if !tc.own {
				tr, ok := p.reverse.Transport.(*http.Transport)
				if !ok || tr.MaxResponseHeaderBytes != upstream.MaxResponseHeaderBytes {
					t.Errorf("transport: got %T, want *http.Transport with MaxResponseHeaderBytes %d", p.reverse.Transport, upstream.MaxResponseHeaderBytes)
				}
			}
			if resp, body := r.do(t, "GET", "/x", ""); resp.StatusCode != http.StatusOK || body != "/x" {
				t.Errorf("GET /x: got %d %q, want 200 /x", resp.StatusCode, body)
			}
		})
	}
}
