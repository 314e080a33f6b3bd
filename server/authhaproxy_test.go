package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testrouter"
	"github.com/admitgo/admit/internal/testserver"
)

// TestAuthHAProxyToldWhole: a request that HAProxy takes in but that
// cannot be passed to admit whole is refused as malformed at the front, in
// either failure mode, and never reaches the app. HAProxy's Lua client
// cannot send more fields than tune.http.maxhdr (HAProxy 2.6.12 crashes),
// and a request a few bytes longer than the client's is more than HAProxy
// reads on its way to admit, which HAProxy answers itself, without
// Admit-Status.
func TestAuthHAProxyToldWhole(t *testing.T) {
	a := startAsking(t, testrouter.HAProxyAuth)
	var many []string
	for i := range 96 { // with Host, User-Agent and Accept-Encoding: 99 of HAProxy's 101
		many = append(many, fmt.Sprintf("X-Filler-%d: %d", i, i))
	}
	big := []string{"X-Filler: " + strings.Repeat("a", 15000)} // under HAProxy's 15360 bytes
	c := clientAt(t, "127.0.0.6")
	for name, fields := range map[string][]string{"many fields": many, "a long field": big} {
		resp := a.send(t, c, "GET", "/l/x", fields...)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Admit-Status") != "malformed" {
			t.Errorf("%s: got %d, Admit-Status %q; want 400, malformed", name, resp.StatusCode, resp.Header.Get("Admit-Status"))
		}
	}
	if n := a.rec.count(); n != 0 {
		t.Errorf("the app got %d requests, want 0", n)
	}
	if resp := a.send(t, c, "GET", "/l/x", many[:80]...); resp.StatusCode != http.StatusOK {
		t.Errorf("with 80 fields: got %d, want 200", resp.StatusCode)
	}
}

// TestAuthHAProxySilentAdmit: an admit that takes connections and never
// answers holds a request no longer than the documented backend's timeout
// server, 1s, and the request is refused, not passed.
func TestAuthHAProxySilentAdmit(t *testing.T) {
	silent := testserver.Silent(t)
	rec := newRecorder(t)
	f := testrouter.StartAuthFront(t, testrouter.HAProxyAuth, silent, strings.TrimPrefix(rec.url, "http://"))
	start := time.Now()
	resp, err := clientAt(t, "127.0.0.7").Get(f.URL + "/l/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || took > 5*time.Second {
		t.Errorf("got %d after %v; want 503 after about 1s", resp.StatusCode, took)
	}
	if n := rec.count(); n != 0 {
		t.Errorf("the app got %d requests, want 0", n)
	}
}

// TestAuthNginxSilentAdmit: an admit that accepts and never answers
// fails nginx's documented configuration closed within its one-second
// read timeout, not nginx's default minute.
func TestAuthNginxSilentAdmit(t *testing.T) {
	silent := testserver.Silent(t)
	rec := newRecorder(t)
	f := testrouter.StartAuthFront(t, testrouter.NginxAuth, silent, strings.TrimPrefix(rec.url, "http://"))
	start := time.Now()
	resp, err := clientAt(t, "127.0.0.7").Get(f.URL + "/l/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusInternalServerError || took > 5*time.Second {
		t.Errorf("got %d after %v; want 500 after about 1s", resp.StatusCode, took)
	}
	if n := rec.count(); n != 0 {
		t.Errorf("the app got %d requests, want 0", n)
	}
}

// TestAuthHAProxyKeyHeader: the action passes the request's own fields to
// admit, so a group keyed by Authorization counts each credential apart,
// and a request without one gets admit's 401, not a 429.
func TestAuthHAProxyKeyHeader(t *testing.T) {
	a := startAskingWith(t, testrouter.HAProxyAuth, "routes:\n  - {group: api, pattern: \"GET /l/{id}\"}\nbudgets:\n  api: {rate: 0.001, burst: 1, key: \"header:Authorization\", key_authenticated: true, on_missing: reject}\n")
	c := clientAt(t, "127.0.0.8")
	for _, step := range []struct {
		auth    string
		status  int
		outcome string
	}{
		{"Bearer one", http.StatusOK, ""},
		{"Bearer one", http.StatusTooManyRequests, "rate_limited"},
		{"Bearer two", http.StatusOK, ""},
		{"", http.StatusUnauthorized, "missing_key"},
	} {
		var fields []string
		if step.auth != "" {
			fields = append(fields, "Authorization: "+step.auth)
		}
		resp := a.send(t, c, "GET", "/l/x", fields...)
		if resp.StatusCode != step.status || resp.Header.Get("Admit-Status") != step.outcome {
			t.Errorf("Authorization %q: got %d, Admit-Status %q; want %d, %q", step.auth, resp.StatusCode, resp.Header.Get("Admit-Status"), step.status, step.outcome)
		}
	}
	if n := a.rec.count(); n != 2 {
		t.Errorf("the app got %d requests, want 2", n)
	}
}
