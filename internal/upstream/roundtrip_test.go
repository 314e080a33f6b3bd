package upstream

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestHeadAsksToClose: RoundTrip asks the upstream to close after a HEAD
// on every HTTP/1 connection, bare or in TLS, and on none over HTTP/2,
// whose framing needs no close and whose connection carries the others'
// requests.
func TestHeadAsksToClose(t *testing.T) {
	for _, tt := range []struct {
		name      string
		tls, h2   bool
		proto     string
		wantClose bool
	}{
		{"http", false, false, "HTTP/1.1", true},
		{"https HTTP/1.1", true, false, "HTTP/1.1", true},
		{"https HTTP/2", true, true, "HTTP/2.0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			type seen struct {
				proto, peer string
				close       bool
			}
			var mu sync.Mutex
			var got []seen
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, seen{r.Proto, r.RemoteAddr, r.Close})
				mu.Unlock()
			}))
			ts.EnableHTTP2 = tt.h2
			if tt.tls {
				ts.StartTLS()
			} else {
				ts.Start()
			}
			t.Cleanup(ts.Close)
			c := Transport()
			t.Cleanup(c.CloseIdleConnections)
			if tt.tls {
				c.TLSClientConfig = ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
			}
			for range 2 {
				req, _ := http.NewRequest("HEAD", ts.URL, nil)
				resp, err := c.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 {
				t.Fatalf("the upstream got %d requests, want 2", len(got))
			}
			for i, s := range got {
				if s.proto != tt.proto {
					t.Errorf("HEAD %d went over %s, want %s", i, s.proto, tt.proto)
				}
				if s.close != tt.wantClose {
					t.Errorf("HEAD %d over %s: Connection: close %v, want %v", i, s.proto, s.close, tt.wantClose)
				}
			}
			if !tt.wantClose && got[0].peer != got[1].peer {
				t.Errorf("the second HEAD came from %s, not over the first's connection (%s)", got[1].peer, got[0].peer)
			}
		})
	}
}
