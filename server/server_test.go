package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/admitgo/admit"
)

// appRoutes are the routes the tests put in front of upstreamApp.
func appRoutes(upstream string) []string {
	return []string{"--upstream", upstream,
		"--route", "webhook=POST /hooks/{name}", "--route", "link=GET /l/{id}", "--route", "health=GET /healthz"}
}

func TestAnonymousRoutes(t *testing.T) {
	linkBurst, webhookBurst := admit.DefaultBudgets()[admit.GroupLink].Burst, admit.DefaultBudgets()[admit.GroupWebhook].Burst
	t.Run("link over burst gets 429", func(t *testing.T) {
		r := start(t, appRoutes(upstreamApp(t).URL)...)
		r.answers(t, linkBurst, http.StatusOK, "GET", "/l/abc", "")
		r.rejected(t, "GET", "/l/abc", "")
		if got := r.count(t, "link", "rate_limited"); got != 1 {
			t.Errorf("rate_limited: got %d, want 1", got)
		}
	})
	t.Run("unlimited route passes from a limited peer", func(t *testing.T) {
		r := start(t, appRoutes(upstreamApp(t).URL)...)
		r.answers(t, linkBurst, http.StatusOK, "GET", "/l/abc", "")
		r.rejected(t, "GET", "/l/abc", "")
		r.answers(t, 3*linkBurst, http.StatusOK, "GET", "/account/settings", "")
		// No route names POST on /l/: an app whose view runs for any
		// method serves it from the limited view, so it is limited too.
		r.rejected(t, "POST", "/l/abc", "form")
	})
	t.Run("failed webhooks cost a token, good ones do not", func(t *testing.T) {
		// The clock stands still: 500 requests take long enough for the
		// webhook rate of 50/s to refill what they spend.
		cfg := serverConfig(t, appRoutes(upstreamApp(t).URL)...)
		cfg.Now = frozen()
		r := startConfig(t, cfg)
		r.answers(t, 2*webhookBurst, http.StatusOK, "POST", "/hooks/github", "{}", "X-Signature: good")
		r.answers(t, webhookBurst, http.StatusUnauthorized, "POST", "/hooks/github", "{}", "X-Signature: forged")
		r.rejected(t, "POST", "/hooks/github", "{}", "X-Signature: good")
	})
	t.Run("disabled limits pass and count", func(t *testing.T) {
		r := start(t, append(appRoutes(upstreamApp(t).URL), "--disable-anon-route-limits")...)
		r.answers(t, linkBurst+1, http.StatusOK, "GET", "/l/abc", "")
		if got := r.count(t, "link", "would_rate_limited"); got != 1 {
			t.Errorf("would_rate_limited: got %d, want 1", got)
		}
		if got := r.count(t, "link", "ok"); got != linkBurst {
			t.Errorf("ok: got %d, want %d", got, linkBurst)
		}
	})
}

func TestForwardingHeaders(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		headers []string
		want    string // the upstream's view, one header a line
	}{
		{"direct client", nil, nil,
			"X-Forwarded-For: 127.0.0.1\nX-Forwarded-Host: HOST\nX-Forwarded-Proto: http\n"},
		{"spoofing client", nil,
			[]string{"X-Forwarded-For: 198.51.100.7", "Forwarded: for=198.51.100.8", "X-Real-IP: 198.51.100.9",
				"X-Forwarded-Host: evil.example", "X-Forwarded-Proto: https", "True-Client-IP: 198.51.100.10",
				"X-Forwarded-Ssl: on", "X-Forwarded-Port: 443", "Client-Ip: 198.51.100.11"},
			"X-Forwarded-For: 127.0.0.1\nX-Forwarded-Host: HOST\nX-Forwarded-Proto: http\n"},
		{"trusted proxy", []string{"--trusted-proxy", "127.0.0.1/32"},
			[]string{"X-Forwarded-For: 203.0.113.1, 198.51.100.7", "X-Forwarded-Host: shop.example", "X-Forwarded-Proto: https"},
			"X-Forwarded-For: 198.51.100.7\nX-Forwarded-Host: shop.example\nX-Forwarded-Proto: https\n"},
		{"trusted proxy with a bad proto", []string{"--trusted-proxy", "127.0.0.1/32"},
			[]string{"X-Forwarded-For: 198.51.100.7", "X-Forwarded-Proto: gopher"},
			"X-Forwarded-For: 198.51.100.7\nX-Forwarded-Host: HOST\nX-Forwarded-Proto: http\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, append(appRoutes(upstreamApp(t).URL), tt.args...)...)
			resp, got := r.do(t, "GET", "/echo", "", tt.headers...)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status: got %d, want 200", resp.StatusCode)
			}
			want := strings.ReplaceAll(tt.want, "HOST", strings.TrimPrefix(r.url, "http://"))
			if got != want {
				t.Errorf("upstream saw\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestUpstreamDown(t *testing.T) {
	down := upstreamApp(t)
	down.Close()
	r := start(t, appRoutes(down.URL)...)
	for _, path := range []string{"/l/abc", "/account"} {
		resp, body := r.do(t, "GET", path, "")
		if resp.StatusCode != http.StatusBadGateway || body != "bad gateway\n" {
			t.Errorf("GET %s: got %d %q, want 502 %q", path, resp.StatusCode, body, "bad gateway\n")
		}
	}
}
