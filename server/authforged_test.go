package server

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// hostConfig limits GET api.example.com/h/{id} to a burst of 3 per
// client; any other host is unlimited.
const hostConfig = "routes:\n  - {group: api, pattern: \"GET api.example.com/h/{id}\"}\nbudgets:\n  api: {rate: 0.001, burst: 3}\n"

// TestAuthFrontForgedHost: through each front as documented, the app is
// told the host admit judged and nothing else: Host and X-Forwarded-Host
// both the client's Host, X-Forwarded-For the client alone,
// X-Forwarded-Proto the scheme, and none of a client's own Forwarded,
// X-Original-*, other X-Forwarded-* or underscore spellings, any of which
// an app that routes by a forwarded host (Django's USE_X_FORWARDED_HOST,
// Werkzeug's ProxyFix) would believe. So a client that names another host
// in Host and the limited one in the forwarding fields is served as the
// other host, and the limited host gets its burst and no more, whatever
// the client forges, with the default port spelled out or not.
func TestAuthFrontForgedHost(t *testing.T) {
	const client = "127.0.0.10"
	// forging is a client's own forwarding fields, each naming host.
	forging := func(host string) string {
		fields := []string{
			"X-Forwarded-Host: " + host, "X_Forwarded_Host: " + host, "X-Forwarded-Server: " + host,
			"Forwarded: host=" + host + ";proto=https", "X-Original-URL: http://" + host + "/h/x", "X-Original-Host: " + host,
			"X-Forwarded-Proto: https", "X-Forwarded-Port: 443", "X-Forwarded-Prefix: /p", "X-Forwarded-For: 1.2.3.4",
		}
		return strings.Join(fields, "\r\n") + "\r\n"
	}
	steps := []struct{ host, forged string }{
		{"other.example", "api.example.com"},
		{"api.example.com", "other.example"},
		{"api.example.com:80", "other.example"},
	}
	for _, kind := range testrouter.AuthKinds() {
		t.Run(string(kind), func(t *testing.T) {
			a := startAskingWith(t, kind, hostConfig)
			for _, step := range steps {
				for range 5 {
					rawFrom(t, client, a.front.Addr, "GET /h/x HTTP/1.1\r\nHost: "+step.host+"\r\n"+forging(step.forged)+"Connection: close\r\n\r\n")
				}
			}
			a.rec.mu.Lock()
			seen := slices.Clone(a.rec.seen)
			a.rec.mu.Unlock()
			limited := 0
			for i, r := range seen {
				switch appHost(r) {
				case "api.example.com":
					limited++
				case "other.example":
				default:
					t.Errorf("request %d: the app was told host %q, which no client sent", i, appHost(r))
				}
				if problems := toldApp(r, client); len(problems) > 0 {
					t.Errorf("request %d: %s", i, strings.Join(problems, "; "))
				}
			}
			if want := 5 + 3; len(seen) != want || limited != 3 {
				t.Errorf("the app got %d requests, %d of them at api.example.com; want %d, the burst of 3 at api.example.com", len(seen), limited, want)
			}
		})
	}
}

// appHost is the host an app routing by X-Forwarded-Host serves r as,
// without the default port.
func appHost(r *http.Request) string {
	host := strings.ToLower(r.Header.Get("X-Forwarded-Host"))
	if h, port, err := net.SplitHostPort(host); err == nil && port == "80" {
		return h
	}
	return host
}

// toldApp returns what is wrong with what the app was told in r, which a
// front proxied for client: anything but the one host admit judged in Host
// and X-Forwarded-Host, the client alone in X-Forwarded-For, http in
// X-Forwarded-Proto, and no other forwarding field.
func toldApp(r *http.Request, client string) []string {
	var problems []string
	if xfh := r.Header["X-Forwarded-Host"]; len(xfh) != 1 || xfh[0] != r.Host {
		problems = append(problems, fmt.Sprintf("Host %q, X-Forwarded-Host %q, want the one host admit judged in both", r.Host, xfh))
	}
	if xff := r.Header["X-Forwarded-For"]; !slices.Equal(xff, []string{client}) {
		problems = append(problems, fmt.Sprintf("X-Forwarded-For %q, want the client alone", xff))
	}
	if proto := r.Header["X-Forwarded-Proto"]; !slices.Equal(proto, []string{"http"}) {
		problems = append(problems, fmt.Sprintf("X-Forwarded-Proto %q, want http", proto))
	}
	told := []string{"X-Forwarded-Host", "X-Forwarded-For", "X-Forwarded-Proto"}
	var forged []string
	for name := range r.Header {
		if name == "Forwarded" || strings.Contains(name, "_") || strings.HasPrefix(name, "X-Original-") ||
			strings.HasPrefix(name, "X-Forwarded-") && !slices.Contains(told, name) {
			forged = append(forged, name)
		}
	}
	if len(forged) > 0 {
		slices.Sort(forged)
		problems = append(problems, fmt.Sprintf("the client's own %s reached the app", strings.Join(forged, ", ")))
	}
	return problems
}
