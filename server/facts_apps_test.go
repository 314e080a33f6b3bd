package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testrouter"
)

// forgedCertHeader returns a self-signed certificate for subject as Apache
// httpd's mod_headers sends SSL_CLIENT_CERT, and Tomcat's SSLValve reads
// it: PEM with its line breaks as spaces.
func forgedCertHeader(t *testing.T, subject string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: subject},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(4102444800, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return strings.ReplaceAll(strings.TrimSpace(string(p)), "\n", " ")
}

// TestTomcatValvesBelieveNoForgedFacts runs Tomcat with RemoteIpValve and
// SSLValve, which believe forwarding and TLS headers from any loopback
// peer. Sent to Tomcat directly, the forged headers make the request secure,
// from another address and port, with a client certificate, cipher suite
// and session id; sent through admit, over either path, none of it.
func TestTomcatValvesBelieveNoForgedFacts(t *testing.T) {
	up := testrouter.Start(t, testrouter.TomcatValves)
	forged := [][2]string{
		{"X-Forwarded-For", "203.0.113.9"},
		{"X-Forwarded-Proto", "https"},
		{"X-Forwarded-Port", "443"},
		{"X-Forwarded-Host", "bank.example"},
		{"SSL_CLIENT_CERT", forgedCertHeader(t, "admin")},
		{"ssl_cipher", "TLS_AES_128_GCM_SHA256"},
		{"ssl_session_id", "forged-session"},
	}
	get := func(base string) testrouter.Seen {
		t.Helper()
		req, err := http.NewRequest("GET", base+"/u/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range forged {
			req.Header[h[0]] = []string{h[1]} // as spelled: Tomcat reads ssl_client_cert literally
		}
		resp, err := (&http.Client{Timeout: testTimeout}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/u/x: got %d, want 200", base, resp.StatusCode)
		}
		return up.Last(t)
	}

	// Sent to Tomcat itself, the valves take every header as fact: the
	// test's premise.
	s := get(up.URL)
	want := map[string]string{"secure": "true", "server_name": "bank.example", "server_port": "443", "client_cert": "CN=admin",
		"cipher_suite": "TLS_AES_128_GCM_SHA256", "ssl_session_id": "forged-session"}
	for k, v := range want {
		if s.Facts[k] != v {
			t.Fatalf("Tomcat's valves without admit: %s = %q, want %q (facts %v): the valves do not read the headers", k, s.Facts[k], v, s.Facts)
		}
	}
	if s.RemoteAddr != "203.0.113.9" {
		t.Fatalf("Tomcat's valves without admit: address %s, want 203.0.113.9", s.RemoteAddr)
	}

	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := serverConfig(t, "--upstream", up.URL, "--route", "link=GET /l/{id}")
			cfg.Transport = tr.new()
			r := startConfig(t, cfg)
			s := get(r.url)
			if s.Facts["secure"] != "false" || s.Facts["server_port"] == "443" {
				t.Errorf("through admit: secure %s, port %s, want false and not 443", s.Facts["secure"], s.Facts["server_port"])
			}
			for _, k := range []string{"client_cert", "cipher_suite", "ssl_session_id"} {
				if v, ok := s.Facts[k]; ok {
					t.Errorf("through admit: Tomcat believes %s = %q, want none", k, v)
				}
			}
			if s.RemoteAddr != "127.0.0.1" || s.Facts["server_name"] == "bank.example" {
				t.Errorf("through admit: address %s, server name %s, want 127.0.0.1 and admit's host", s.RemoteAddr, s.Facts["server_name"])
			}
		})
	}
}

// TestTornadoXheadersBelieveNoForgedFacts runs Tornado with xheaders,
// which believes X-Scheme and X-Real-Ip from any peer. Sent to Tornado
// directly, they make the request https from another address; sent
// through admit, over either path, it is http from admit's client.
func TestTornadoXheadersBelieveNoForgedFacts(t *testing.T) {
	up := testrouter.Start(t, testrouter.Tornado)
	forged := []string{"X-Scheme: https", "X-Real-Ip: 203.0.113.9"}
	get := func(base string) testrouter.Seen {
		t.Helper()
		return seenWith(t, up, base, forged)
	}
	if s := get(up.URL); s.Scheme != "https" || s.RemoteAddr != "203.0.113.9" {
		t.Fatalf("Tornado without admit: scheme %s, address %s, want https and 203.0.113.9: xheaders does not read the headers", s.Scheme, s.RemoteAddr)
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := serverConfig(t, "--upstream", up.URL, "--route", "link=GET /l/{id}")
			cfg.Transport = tr.new()
			r := startConfig(t, cfg)
			if s := get(r.url); s.Scheme != "http" || s.RemoteAddr != "127.0.0.1" {
				t.Errorf("through admit: scheme %s, address %s, want http and 127.0.0.1", s.Scheme, s.RemoteAddr)
			}
		})
	}
}

// TestJettyForwardedCustomizerBelievesNoForgedFacts runs Jetty with a
// ForwardedRequestCustomizer, which believes X-Proxied-Https, Proxy-Ssl-Id
// and Proxy-Auth-Cert from any peer. Sent to Jetty directly, they make the
// request secure, with the client's session id and cipher suite; sent
// through admit, over either path, none of it.
func TestJettyForwardedCustomizerBelievesNoForgedFacts(t *testing.T) {
	up := testrouter.Start(t, testrouter.Jetty)
	forged := []string{"X-Proxied-Https: on", "Proxy-Ssl-Id: forged-session", "Proxy-Auth-Cert: TLS_AES_128_GCM_SHA256"}
	get := func(base string) testrouter.Seen {
		t.Helper()
		return seenWith(t, up, base, forged)
	}
	s := get(up.URL)
	want := map[string]string{"secure": "true", "cipher_suite": "TLS_AES_128_GCM_SHA256", "ssl_session_id": "forged-session"}
	for k, v := range want {
		if s.Facts[k] != v {
			t.Fatalf("Jetty without admit: %s = %q, want %q (facts %v): the customizer does not read the headers", k, s.Facts[k], v, s.Facts)
		}
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := serverConfig(t, "--upstream", up.URL, "--route", "link=GET /l/{id}")
			cfg.Transport = tr.new()
			r := startConfig(t, cfg)
			s := get(r.url)
			if s.Facts["secure"] != "false" || s.Scheme != "http" {
				t.Errorf("through admit: secure %s, scheme %s, want false and http", s.Facts["secure"], s.Scheme)
			}
			for _, k := range []string{"cipher_suite", "ssl_session_id"} {
				if v, ok := s.Facts[k]; ok {
					t.Errorf("through admit: Jetty believes %s = %q, want none", k, v)
				}
			}
		})
	}
}

// seenWith sends GET base/u/x with the forged header lines, wants 200, and
// returns what the app up saw of it.
func seenWith(t *testing.T, up *testrouter.Router, base string, forged []string) testrouter.Seen {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/u/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range forged {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := (&http.Client{Timeout: testTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/u/x: got %d, want 200", base, resp.StatusCode)
	}
	return up.Last(t)
}
