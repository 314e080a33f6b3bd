package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admitgo/admit/server/internal/config"
)

// authServer builds admit auth from args, as on the command line with an
// empty environment, without listening: tests serve its handler directly.
func authServer(t *testing.T, args ...string) *server {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--trusted-proxy", "10.0.0.0/24"}, args...)
	cfg, err := config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...), args, func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Now = frozen()
	s, err := newServer(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// authAsk sends s a forward-auth request from peer with headers ("Name:
// value"), and returns the answer.
func authAsk(s *server, peer string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = peer
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		r.Header.Add(name, value)
	}
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	return w
}

const edge = "10.0.0.2:50000" // a trusted front

// nginxAsks is a forward-auth request as the documented nginx
// configuration sends it for a client at client.
func nginxAsks(method, uri, client string) []string {
	return []string{"X-Original-Method: " + method, "X-Original-URI: " + uri, "X-Forwarded-For: " + client, "Host: app.example"}
}

// caddyAsks is one as Caddy's forward_auth sends it.
func caddyAsks(method, uri, client string) []string {
	return []string{"X-Forwarded-Method: " + method, "X-Forwarded-Uri: " + uri, "X-Forwarded-Host: app.example", "X-Forwarded-Proto: https", "X-Forwarded-For: " + client}
}

// TestAuthAdmitsThenRefuses: a route's budget holds through admit auth as
// through the proxy, per client, in both header families: 20 admitted
// (the link group's burst), then 429 with Retry-After, and Admit-Status
// saying why every time.
func TestAuthAdmitsThenRefuses(t *testing.T) {
	for _, family := range []struct {
		name string
		asks func(method, uri, client string) []string
	}{{"nginx", nginxAsks}, {"caddy", caddyAsks}} {
		t.Run(family.name, func(t *testing.T) {
			s := authServer(t, "--route", "link=GET /l/{id}")
			for i := range 20 {
				w := authAsk(s, edge, family.asks("GET", "/l/abc", "198.51.100.7")...)
				if w.Code != http.StatusOK || w.Header().Get(admitStatus) != "ok" {
					t.Fatalf("request %d: got %d %s, want 200 ok", i+1, w.Code, w.Header().Get(admitStatus))
				}
			}
			w := authAsk(s, edge, family.asks("GET", "/l/abc", "198.51.100.7")...)
			if w.Code != http.StatusTooManyRequests || w.Header().Get(admitStatus) != "rate_limited" || w.Header().Get("Retry-After") == "" {
				t.Errorf("request 21: got %d %s, Retry-After %q, want 429 rate_limited with Retry-After", w.Code, w.Header().Get(admitStatus), w.Header().Get("Retry-After"))
			}
			if w := authAsk(s, edge, family.asks("GET", "/l/abc", "198.51.100.8")...); w.Code != http.StatusOK {
				t.Errorf("another client: got %d, want 200: its bucket is its own", w.Code)
			}
			if w := authAsk(s, edge, family.asks("GET", "/other", "198.51.100.7")...); w.Code != http.StatusOK || w.Header().Get(admitStatus) != "unlimited" {
				t.Errorf("a path no route matches: got %d %s, want 200 unlimited", w.Code, w.Header().Get(admitStatus))
			}
		})
	}
}

// TestAuthReadsOneRequest: admit auth believes a forwarded request only
// from a trusted edge, told in exactly one family with each field once;
// anything else is refused, never judged under a guess.
func TestAuthReadsOneRequest(t *testing.T) {
	s := authServer(t, "--route", "link=GET /l/{id}")
	tests := []struct {
		name    string
		peer    string
		headers []string
		status  int
		outcome string
	}{
		{"nginx", edge, nginxAsks("GET", "/l/a", "198.51.100.7"), 200, "ok"},
		{"caddy", edge, caddyAsks("GET", "/l/a", "198.51.100.7"), 200, "ok"},
		{"ingress-nginx's absolute URL", edge, []string{"X-Original-Method: GET", "X-Original-URL: https://app.example/l/a", "X-Forwarded-For: 198.51.100.7"}, 200, "ok"},
		{"untrusted peer", "192.0.2.9:50000", nginxAsks("GET", "/l/a", "198.51.100.7"), 403, authUntrusted},
		{"both families", edge, append(nginxAsks("GET", "/other", "198.51.100.7"), "X-Forwarded-Method: GET", "X-Forwarded-Uri: /l/a"), 400, authMalformed},
		{"a family's field twice", edge, append(nginxAsks("GET", "/other", "198.51.100.7"), "X-Original-URI: /l/a"), 400, authMalformed},
		{"URI and URL both", edge, append(nginxAsks("GET", "/other", "198.51.100.7"), "X-Original-URL: https://app.example/l/a"), 400, authMalformed},
		{"no method", edge, []string{"X-Original-URI: /l/a"}, 400, authMalformed},
		{"no family", edge, []string{"X-Forwarded-For: 198.51.100.7"}, 400, authMalformed},
		{"no X-Forwarded-Host", edge, []string{"X-Forwarded-Method: GET", "X-Forwarded-Uri: /l/a", "X-Forwarded-For: 198.51.100.7", "Host: admit.internal"}, 400, authMalformed},
		{"absolute URI", edge, caddyAsks("GET", "http://elsewhere/l/a", "198.51.100.7"), 400, authMalformed},
		{"method not a token", edge, caddyAsks("GE T", "/l/a", "198.51.100.7"), 400, authMalformed},
		{"a path the app would read otherwise", edge, nginxAsks("GET", "/l//a", "198.51.100.7"), 400, authMalformed},
		{"an escape the proxy would decode", edge, nginxAsks("GET", "/l/%61", "198.51.100.7"), 400, authMalformed},
		{"an encoded slash", edge, nginxAsks("GET", "/l/a%2Fb", "198.51.100.7"), 400, authMalformed},
		{"TRACE", edge, nginxAsks("TRACE", "/l/a", "198.51.100.7"), 501, authMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := authAsk(s, tt.peer, tt.headers...)
			if w.Code != tt.status || w.Header().Get(admitStatus) != tt.outcome {
				t.Errorf("got %d %s (%q), want %d %s", w.Code, w.Header().Get(admitStatus), w.Body.String(), tt.status, tt.outcome)
			}
		})
	}
}

// TestAuthClientFromTrustedHops: the client is the first untrusted hop of
// X-Forwarded-For from the right, as the proxy finds it, so a client that
// sends its own X-Forwarded-For (which nginx's $proxy_add_x_forwarded_for
// and Caddy keep on the left) cannot spread its requests over buckets.
func TestAuthClientFromTrustedHops(t *testing.T) {
	s := authServer(t, "--route", "link=GET /l/{id}")
	for i := range 20 {
		spoof := "203.0.113." + string(rune('0'+i%10)) + ", 198.51.100.7"
		if w := authAsk(s, edge, nginxAsks("GET", "/l/a", spoof)...); w.Code != http.StatusOK {
			t.Fatalf("request %d: got %d, want 200", i+1, w.Code)
		}
	}
	if w := authAsk(s, edge, nginxAsks("GET", "/l/a", "203.0.113.99, 198.51.100.7")...); w.Code != http.StatusTooManyRequests {
		t.Errorf("request 21 with a new spoofed hop: got %d, want 429: the key is the hop the front saw", w.Code)
	}
}

// TestAuthDenyStatus: --deny-status answers every refusal with its
// status, for nginx, whose auth_request passes only 401 and 403, while
// Admit-Status and Retry-After still tell the refusal.
func TestAuthDenyStatus(t *testing.T) {
	s := authServer(t, "--route", "link=GET /l/{id}", "--deny-status", "403")
	for range 20 {
		authAsk(s, edge, nginxAsks("GET", "/l/a", "198.51.100.7")...)
	}
	w := authAsk(s, edge, nginxAsks("GET", "/l/a", "198.51.100.7")...)
	if w.Code != http.StatusForbidden || w.Header().Get(admitStatus) != "rate_limited" || w.Header().Get("Retry-After") == "" {
		t.Errorf("got %d %s, Retry-After %q, want 403 rate_limited with Retry-After", w.Code, w.Header().Get(admitStatus), w.Header().Get("Retry-After"))
	}
	// nginx reads no body of the auth answer, and closes a connection
	// whose answer it left unread: the deny answer has none, and says so
	// on the wire (TestAuthAnswersAsNetHTTP).
	if w.Body.Len() != 0 {
		t.Errorf("deny answer: body %q, want none", w.Body.String())
	}
	if w := authAsk(s, "192.0.2.9:1", nginxAsks("GET", "/l/a", "198.51.100.9")...); w.Code != http.StatusForbidden {
		t.Errorf("untrusted peer: got %d, want 403", w.Code)
	}
}

// TestAuthChargesWebhooks: the webhook group is charged on failure by the
// proxy, which sees the app's answer; admit auth never does, so it charges
// every request, or a webhook flood would never spend a token.
func TestAuthChargesWebhooks(t *testing.T) {
	file := writeConfig(t, "budgets:\n  webhook:\n    burst: 2\n")
	s := authServer(t, "--config", file, "--route", "webhook=POST /hooks/{name}")
	for i := range 2 {
		if w := authAsk(s, edge, caddyAsks("POST", "/hooks/github", "198.51.100.7")...); w.Code != http.StatusOK {
			t.Fatalf("request %d: got %d, want 200", i+1, w.Code)
		}
	}
	if w := authAsk(s, edge, caddyAsks("POST", "/hooks/github", "198.51.100.7")...); w.Code != http.StatusTooManyRequests {
		t.Errorf("request 3: got %d, want 429: every webhook is charged", w.Code)
	}
}

// TestAuthMethodsAsTheAppRunsThem: the front forwards method override
// headers and form bodies admit cannot see, so a POST is held to the
// limits of every method they could name.
func TestAuthMethodsAsTheAppRunsThem(t *testing.T) {
	s := authServer(t, "--route", "link=GET /l/{id}", "--upstream-profile", "rails")
	tests := []struct {
		name    string
		headers []string
		outcome string
	}{
		{"override header", append(caddyAsks("POST", "/l/a", "198.51.100.7"), "X-HTTP-Method-Override: GET"), "ok"},
		{"a form body it cannot see", caddyAsks("POST", "/l/a", "198.51.100.7"), "ok"},
		{"a path no method reaches", caddyAsks("POST", "/x/a", "198.51.100.7"), authUnlimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := authAsk(s, edge, tt.headers...)
			if w.Code != http.StatusOK || w.Header().Get(admitStatus) != tt.outcome {
				t.Errorf("got %d %s, want 200 %s", w.Code, w.Header().Get(admitStatus), tt.outcome)
			}
		})
	}
}

// TestAuthStartupErrors: what needs an upstream, or the app's answer, is
// refused at startup with exit 2, named as the user gave it.
func TestAuthStartupErrors(t *testing.T) {
	limits := writeConfig(t, "budgets:\n  link:\n    per_client: 4\n")
	queue := writeConfig(t, "budgets:\n  link:\n    queue: 5\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no trusted front", []string{"--route", "link=GET /l/{id}"}, "admit auth: --trusted-proxy (ADMIT_TRUSTED_PROXY) is required"},
		{"an upstream", []string{"--trusted-proxy", "127.0.0.1/32", "--upstream", "http://127.0.0.1:1"}, "admit auth: --upstream (ADMIT_UPSTREAM) is set, but admit auth decides for a front and forwards nothing"},
		{"decoded slashes", []string{"--trusted-proxy", "127.0.0.1/32", "--escaped-slashes", "decode"}, "admit auth: --escaped-slashes (ADMIT_ESCAPED_SLASHES) is set"},
		{"a deny status that admits", []string{"--trusted-proxy", "127.0.0.1/32", "--deny-status", "200"}, "admit auth: --deny-status (ADMIT_DENY_STATUS) 200: want a status from 400 to 599"},
		{"a queue", []string{"--trusted-proxy", "127.0.0.1/32", "--config", queue}, "admit auth: --config \"" + queue + "\": line 2: budgets.link.queue: a front gives up on a decision that waits"},
		{"an in-flight cap", []string{"--trusted-proxy", "127.0.0.1/32", "--config", limits}, "admit auth: --config \"" + limits + "\": line 2: budgets.link.per_client: a forward-auth decision ends before the app answers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runArgs(t, nil, append([]string{"auth"}, tt.args...)...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %v, want an error starting %q", err, tt.want)
			}
			var uerr usageError
			if !errors.As(err, &uerr) {
				t.Errorf("got %T, want a usage error (exit 2)", err)
			}
		})
	}
}

// TestAuthValidate: admit auth validate says what the mode turns off.
func TestAuthValidate(t *testing.T) {
	out, err := runArgs(t, nil, "auth", "validate", "--trusted-proxy", "127.0.0.1/32", "--route", "webhook=POST /hooks/{name}")
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"in-flight caps and charge_on_failure are off", "\nok\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "grpc.health") {
		t.Errorf("admit auth serves no gRPC health service, so its path is the app's, not a route:\n%s", out)
	}
	if strings.Contains(out, "unchecked  upstream") {
		t.Errorf("admit auth has no upstream to check:\n%s", out)
	}
	for _, unapplied := range []string{"per_client", "inflight", "max_body_bytes", "hold_timeout", "charge_on_failure"} {
		if strings.Contains(out, unapplied+":") {
			t.Errorf("validate shows %s, which admit auth does not apply:\n%s", unapplied, out)
		}
	}
}

// BenchmarkAuth is one decision of admit auth, admitted and refused,
// without the network.
func BenchmarkAuth(b *testing.B) {
	for _, c := range []struct {
		name  string
		burst string
	}{{"admitted", "1000000000"}, {"refused", "1"}} {
		b.Run(c.name, func(b *testing.B) {
			file := filepath.Join(b.TempDir(), "admit.yaml")
			os.WriteFile(file, []byte("budgets:\n  link: {rate: 1e-3, burst: "+c.burst+"}\n"), 0o600)
			cfg, err := config.ParseAuth("admit auth", append(config.AuthOptions, config.Options...), []string{"--trusted-proxy", "10.0.0.0/24", "--route", "link=GET /l/{id}", "--config", file}, func(string) string { return "" }, io.Discard, config.PrintAuthUsage)
			if err != nil {
				b.Fatal(err)
			}
			s, err := newServer(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = edge
			for _, h := range nginxAsks("GET", "/l/abc", "198.51.100.7") {
				name, value, _ := strings.Cut(h, ": ")
				r.Header.Add(name, value)
			}
			header := r.Header
			b.ReportAllocs()
			for b.Loop() {
				// A request's header map is its own, as the server reads
				// one per request: admit auth takes it over.
				r.Header = header.Clone()
				w := httptest.NewRecorder()
				s.handler.ServeHTTP(w, r)
				if w.Code != http.StatusOK && c.name == "admitted" {
					b.Fatalf("got %d, want 200", w.Code)
				}
			}
		})
	}
}

// TestAuthCountsWhatItRefusesBefore: a request from an untrusted peer, or
// one that does not tell one request, is counted in admit.server.malformed
// under its reason, as the proxy counts what it refuses before routing.
func TestAuthCountsWhatItRefusesBefore(t *testing.T) {
	s := authServer(t, "--route", "link=GET /l/{id}")
	count := func(reason string) int64 {
		for i, r := range malformedReasons {
			if r.reason == reason {
				return s.malformed.n[i].Load()
			}
		}
		t.Fatalf("no malformed reason %q", reason)
		return 0
	}
	authAsk(s, "192.0.2.9:1", nginxAsks("GET", "/l/a", "198.51.100.7")...)
	authAsk(s, edge, append(nginxAsks("GET", "/l/a", "198.51.100.7"), "X-Forwarded-Uri: /x")...)
	authAsk(s, edge, append(nginxAsks("GET", "/l/a", "198.51.100.7"), "X-Forwarded-Uri: /x")...)
	if got := count("untrusted_front"); got != 1 {
		t.Errorf("untrusted_front: got %d, want 1", got)
	}
	if got := count("not_one_request"); got != 2 {
		t.Errorf("not_one_request: got %d, want 2", got)
	}
}

// TestTellingReadsTheFamilies: readTelling, which walks a request's fields
// once, knows each field of the two families, and forwardedRequest drops
// them all, so that the lists and the walk cannot drift apart.
func TestTellingReadsTheFamilies(t *testing.T) {
	for _, family := range [][]string{forwardedFamily, originalFamily} {
		for _, name := range family {
			got := readTelling(http.Header{name: {"v"}})
			if got.fwd == got.orig || got.fwd != (family[0] == forwardedFamily[0]) {
				t.Errorf("%s: read as X-Forwarded %t, X-Original %t", name, got.fwd, got.orig)
			}
		}
	}
	if got := readTelling(http.Header{"X-Forwarded-For": {"192.0.2.1"}, "Accept": {"*/*"}}); got.fwd || got.orig || got.hop {
		t.Errorf("fields of neither family read as %+v", got)
	}
}
