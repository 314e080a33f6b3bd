package server

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	proxyproto "github.com/pires/go-proxyproto"

	"github.com/admitgo/admit"
)

// viaBalancer returns a client whose connections start with a PROXY
// protocol v2 header naming source as the client, as an L4 load balancer's
// would.
func viaBalancer(t *testing.T, source string) *http.Client {
	t.Helper()
	src, err := net.ResolveTCPAddr("tcp", source)
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	return &http.Client{Timeout: testTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if _, err := proxyproto.HeaderProxyFromAddrs(2, src, c.RemoteAddr()).WriteTo(c); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
	}}
}

func TestProxyProtocol(t *testing.T) {
	r := start(t, append(appRoutes(upstreamApp(t).URL), "--proxy-protocol-from", "127.0.0.1/32")...)
	a, b := viaBalancer(t, "203.0.113.7:40000"), viaBalancer(t, "[2001:db8::7]:40000")
	t.Cleanup(a.CloseIdleConnections)
	t.Cleanup(b.CloseIdleConnections)

	get := func(t *testing.T, c *http.Client, path string) (int, string) {
		t.Helper()
		r.client = c
		resp, body := r.do(t, "GET", path, "")
		return resp.StatusCode, body
	}
	t.Run("the header's source is the client", func(t *testing.T) {
		tests := []struct {
			name   string
			client *http.Client
			want   string
		}{
			{"IPv4", a, "X-Forwarded-For: 203.0.113.7\n"},
			{"IPv6", b, "X-Forwarded-For: 2001:db8::7\n"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status, body := get(t, tt.client, "/echo")
				if got, _, _ := strings.Cut(body, "X-Forwarded-Host"); status != http.StatusOK || got != tt.want {
					t.Errorf("got %d %q, want 200 %q", status, got, tt.want)
				}
			})
		}
	})
	t.Run("the header's source is the key", func(t *testing.T) {
		for i := range admit.DefaultBudgets()[admit.GroupLink].Burst {
			if status, body := get(t, a, "/l/x"); status != http.StatusOK {
				t.Fatalf("request %d from 203.0.113.7: got %d %q, want 200", i+1, status, body)
			}
		}
		if status, _ := get(t, a, "/l/x"); status != http.StatusTooManyRequests {
			t.Errorf("203.0.113.7 over its burst: got %d, want 429", status)
		}
		if status, _ := get(t, b, "/l/x"); status != http.StatusOK {
			t.Errorf("2001:db8::7 on the same balancer: got %d, want 200", status)
		}
	})
	t.Run("a peer without a header is cut off", func(t *testing.T) {
		c := &http.Client{Timeout: testTimeout}
		defer c.CloseIdleConnections()
		if _, err := c.Get(r.url + "/l/x"); err == nil {
			t.Error("a request without a PROXY header was answered")
		}
	})
}
