package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/clientip"
)

// forgedFacts are facts about the connection or the routing that a client
// forges in headers admit stripped by no name before: each one a server or
// framework believes (Tornado's xheaders, Jetty's ForwardedRequestCustomizer,
// Tomcat's SSLValve, gunicorn, Envoy, Traefik, AWS and IIS mTLS setups).
var forgedFacts = []string{
	"X-Scheme: https",                         // Tornado with xheaders
	"X-Proxied-Https: on",                     // Jetty
	"Proxy-Ssl-Id: 0123abcd",                  // Jetty: the TLS session id
	"Proxy-Auth-Cert: TLS_AES_128_GCM_SHA256", // Jetty: the cipher suite
	"SSL_CLIENT_CERT: -----BEGIN CERTIFICATE----- x -----END CERTIFICATE-----", // Tomcat's SSLValve
	"Ssl_Session_Id: 0123abcd",                              // Tomcat's SSLValve
	"X-SSL-Client-Verify: SUCCESS",                          // nginx and HAProxy setups
	"X-Forwarded-Client-Cert: Hash=ab;Subject=\"CN=admin\"", // Envoy, Istio
	"X-Forwarded-Tls-Client-Cert: MIIB",                     // Traefik's PassTLSClientCert
	"X-Amzn-Mtls-Clientcert-Subject: CN=admin",              // AWS ALB
	"X-Arr-Clientcert: MIIB",                                // IIS ARR, Azure App Service
	"X-Client-Cert: MIIB",                                   // ASP.NET Core's certificate forwarding
	"Client-Cert: :MIIB:",                                   // RFC 9440
	"X-Envoy-Internal: true",                                // Envoy
	"SCRIPT_NAME: /admin",                                   // gunicorn
	"Wl-Proxy-Ssl: true",                                    // WebLogic's proxy plug-in
	"Proxy: http://198.51.100.9:3128",                       // httpoxy: CGI's HTTP_PROXY
	"X-Forwarded-Protocol: ssl",                             // gunicorn
}

// ordinaryHeaders are what apps send each other: none is a fact about the
// connection, and every one must reach the upstream as sent.
var ordinaryHeaders = []string{
	"X-Client-Version: 4.2.0", "X-Request-Id: 9f1c", "X-Correlation-Id: c-1", "X-Api-Key: k1",
	"X-Csrf-Token: t1", "X-Requested-With: XMLHttpRequest", "User-Agent: app/1.0", "Accept: application/json",
	"Accept-Language: en", "Authorization: Bearer abc", "Cookie: s=1", "Idempotency-Key: 7d2e",
	"Traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Tracestate: v=1",
	"X-Amz-Date: 20260101T000000Z", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD", "X-Amz-Security-Token: tok",
	"X-Amzn-Trace-Id: Root=1-5759e988", "X-Github-Event: push", "X-Github-Delivery: 72d3162e",
	"X-Hub-Signature-256: sha256=ab", "Stripe-Signature: t=1,v1=ab", "X-Slack-Signature: v0=ab",
	"X-Shopify-Hmac-Sha256: ab", "Content-Type: application/json", "If-None-Match: \"e1\"",
	"X-B3-Traceid: 80f198ee56343ba8", "Baggage: k=v", "X-Device-Id: d1", "X-Tenant-Id: t1",
	"X-Client-Id: c1", "X-Client-Name: web", "Origin: https://app.example",
	"Referer: https://app.example/", "Cache-Control: no-cache", "X-Custom_Header: underscores pass",
}

// sendRaw sends a GET through r with header names written exactly as given.
func sendRaw(t *testing.T, r *running, path string, headers []string) {
	t.Helper()
	req, err := http.NewRequest("GET", r.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header[name] = append(req.Header[name], value)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: got %d, want 200", path, resp.StatusCode)
	}
}

// spellingsOf returns a header line's name as sent, in lower and upper
// case, and with hyphens and underscores swapped, each with the value.
func spellingsOf(line string) []string {
	name, value, _ := strings.Cut(line, ": ")
	swap := strings.Map(func(r rune) rune {
		switch r {
		case '-':
			return '_'
		case '_':
			return '-'
		}
		return r
	}, name)
	var out []string
	for _, n := range []string{name, strings.ToLower(name), strings.ToUpper(name), swap, strings.ToLower(swap)} {
		out = append(out, n+": "+value)
	}
	return out
}

// TestForgedFactsStripped: over both paths, no spelling of a forged fact
// reaches the upstream, and every ordinary header does.
func TestForgedFactsStripped(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			rec := newRecorder(t)
			cfg := serverConfig(t, "--upstream", rec.url, "--route", "link=GET /l/{id}")
			cfg.Transport = tr.new()
			r := startConfig(t, cfg)
			for _, line := range forgedFacts {
				sendRaw(t, r, "/u/x", spellingsOf(line))
				name, _, _ := strings.Cut(line, ": ")
				if v := headerFolded(rec.last().Header, name); v != nil {
					t.Errorf("upstream received %s: %q, want it removed", name, v)
				}
			}
			sendRaw(t, r, "/u/x", ordinaryHeaders)
			h := rec.last().Header
			for _, line := range ordinaryHeaders {
				name, value, _ := strings.Cut(line, ": ")
				if got := h.Get(name); got != value {
					t.Errorf("upstream received %s: %q, want %q", name, got, value)
				}
			}
		})
	}
}

// sampleName returns a name row matches: its pattern, and for a prefix the
// prefix with a suffix.
func sampleName(row factRow) string {
	if p, ok := strings.CutSuffix(row.pattern, "*"); ok {
		return p + "Example"
	}
	return row.pattern
}

// TestFactTableRows: every row's name, in every case and with hyphens and
// underscores swapped, raw or as net/http keys it, is classified in the
// row's family; an exact row wins over a prefix, and a longer prefix over a
// shorter one.
func TestFactTableRows(t *testing.T) {
	for _, row := range factTable {
		for _, line := range spellingsOf(sampleName(row) + ": v") {
			name, _, _ := strings.Cut(line, ": ")
			for _, key := range []string{name, http.CanonicalHeaderKey(name)} {
				got := facts.classify(key)
				if got == nil || got.family != row.family {
					t.Errorf("classify(%q) = %v, want family %s (row %s)", key, got, row.family, row.pattern)
				}
			}
		}
	}
	for _, name := range []string{"X-Forwarded-Proto", "X-Forwarded-Client-Cert", "X-Client-Verify", "Proxy-Ssl-Id", "Wl-Proxy-Client-Ip", "X-Ssl-Cert"} {
		if got, want := facts.classify(name), exactRow(t, name); got != want {
			t.Errorf("classify(%q) = %s, want the row %s", name, got.pattern, want.pattern)
		}
	}
	for _, tc := range []struct{ name, pattern string }{
		{"X-Forwarded-Tls-Client-Cert-Info", "X-Forwarded-Tls-Client-Cert*"},
		{"Ssl-Client-Verify", "Ssl-Client-*"},
		{"Ssl-Cipher", "Ssl-*"},
		{"Wl-Proxy-Client-Cert", "Wl-Proxy-Client-*"},
		{"Proxy-Foo", "Proxy-*"},
	} {
		if got := facts.classify(tc.name); got == nil || got.pattern != tc.pattern {
			t.Errorf("classify(%q) = %v, want the row %s", tc.name, got, tc.pattern)
		}
	}
}

func exactRow(t *testing.T, name string) *factRow {
	t.Helper()
	for i := range factTable {
		if factTable[i].pattern == name {
			return &factTable[i]
		}
	}
	t.Fatalf("no row %s", name)
	return nil
}

// TestFactTableRowsUnique: no pattern twice, and families all named.
func TestFactTableRowsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, row := range factTable {
		if k := foldName(row.pattern); seen[k] {
			t.Errorf("pattern %s twice", row.pattern)
		} else {
			seen[k] = true
		}
		if row.readers == "" || row.family >= numFamilies {
			t.Errorf("row %s: family %d, readers %q", row.pattern, row.family, row.readers)
		}
	}
}

// TestOrdinaryHeadersNotFacts: no row matches an ordinary header.
func TestOrdinaryHeadersNotFacts(t *testing.T) {
	for _, line := range ordinaryHeaders {
		name, _, _ := strings.Cut(line, ": ")
		if row := facts.classify(name); row != nil {
			t.Errorf("classify(%q) = row %s, want none", name, row.pattern)
		}
	}
}

// TestClassifyAllocs pins the direct path's per-header check at no
// allocation, for a fact and for an ordinary header.
func TestClassifyAllocs(t *testing.T) {
	for _, name := range []string{"X-Request-Id", "Accept-Encoding", "X-Forwarded-Tls-Client-Cert", "X_Ssl_Client_Cert", "Proxy-Ssl-Id"} {
		if n := testing.AllocsPerRun(100, func() { facts.classify(name) }); n != 0 {
			t.Errorf("classify(%q): %v allocations, want 0", name, n)
		}
	}
}

// classifySlow is factTable read the obvious way, row by row, which the
// index must agree with.
func classifySlow(name string) *factRow {
	folded := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	var best *factRow
	for i := range factTable {
		row := &factTable[i]
		p, prefix := strings.CutSuffix(row.pattern, "*")
		p = strings.ToLower(p)
		switch {
		case !prefix && folded == p:
			return row
		case prefix && strings.HasPrefix(folded, p) && (best == nil || len(p) > len(best.pattern)-1):
			best = row
		}
	}
	return best
}

// FuzzStrip checks that the two ways the proxy strips a request's headers
// (the Transport path deletes from a copy in rewrite, the direct path asks
// skip of each name as it writes) keep the same headers, and that the index
// classifies as the table reads. The input is header names, one a line.
func FuzzStrip(f *testing.F) {
	for _, seed := range []string{
		"X-Scheme\nX-Request-Id",                // a fact and an ordinary header
		"X_Forwarded_For\nx-forwarded-for",      // a written header's underscore spelling
		"SSL_CLIENT_CERT\nSsl-Cipher",           // Tomcat's SSLValve, both rows
		"X-Forwarded-Tls-Client-Cert-Info",      // the longest prefix wins
		"X-Http-Method-Override\nX_Http_Method", // overrides: kept only as spelled
		"Proxy\nProxy-Ssl-Id\nProxy-Status",     // httpoxy and the Proxy- prefix
		"X-Ssl-Client-Cert\nx_ssl_client_cert",  // a --pass-header name and its other spelling
		"X-Amz-Date\nX-Amzn-Mtls-Clientcert",    // AWS's signature beside its mTLS facts
		"Client-Certificate\nX-Client-Version",  // near misses of prefixes
		"",                                      // no header
	} {
		f.Add(seed, true)
	}
	resolver, err := clientip.New(clientip.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, names string, trusted bool) {
		fwd := &forwarder{resolver: resolver, headerRules: headerRules{keepOverrides: len(names)%2 == 0,
			pass: map[string]bool{"X-Ssl-Client-Cert": true}, stripped: new(strippedCounts)}}
		r := &http.Request{Header: http.Header{}, RemoteAddr: "127.0.0.2:1"}
		if trusted {
			r.RemoteAddr = "127.0.0.1:1"
		}
		for name := range strings.Lines(names) {
			name = strings.TrimSuffix(name, "\n")
			r.Header[name] = []string{"v"}
			if got, want := facts.classify(name), classifySlow(name); got != want {
				t.Errorf("classify(%q) = %v, want %v", name, got, want)
			}
		}
		out := r.Header.Clone()
		for name := range out {
			if fwd.skip(r, name) {
				delete(out, name)
			}
		}
		for name := range r.Header {
			_, kept := out[name]
			if direct := !fwd.skip(r, name); direct != kept {
				t.Errorf("%q: the direct path keeps it: %v; the Transport path: %v", name, direct, kept)
			}
		}
	})
}

// TestPassHeaderFromTrustedProxyOnly: a --pass-header fact reaches the
// upstream as spelled from a trusted proxy, and from no one else; its other
// spellings never do. What is stripped is counted by family.
func TestPassHeaderFromTrustedProxyOnly(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			rec := newRecorder(t)
			cfg := serverConfig(t, "--upstream", rec.url, "--route", "link=GET /l/{id}",
				"--trusted-proxy", "127.0.0.1/32", "--pass-header", "x-ssl-client-cert, X-Amzn-Mtls-Clientcert")
			cfg.Transport = tr.new()
			r := startConfig(t, cfg)
			addr := strings.TrimPrefix(r.url, "http://")
			const head = "GET /u/x HTTP/1.1\r\nHost: app.example\r\nX-SSL-Client-Cert: trusted\r\nX_SSL_Client_Cert: forged\r\nX-Scheme: https\r\nConnection: close\r\n\r\n"
			for _, tc := range []struct {
				from string
				want []string
			}{
				{"127.0.0.1", []string{"trusted"}},
				{"127.0.0.2", nil},
			} {
				if a := rawFrom(t, tc.from, addr, head); a.status != http.StatusOK {
					t.Fatalf("from %s: got %d, want 200", tc.from, a.status)
				}
				if got := headerFolded(rec.last().Header, "X-Ssl-Client-Cert"); !slices.Equal(got, tc.want) {
					t.Errorf("from %s: upstream received X-Ssl-Client-Cert %q, want %q", tc.from, got, tc.want)
				}
			}
			// From the trusted proxy X_SSL_Client_Cert and X-Scheme were
			// stripped; from the other peer all three.
			if got := r.scrapeCount(t, `admit_server_stripped_headers_total{admit_server_family="client_cert"`); got != 3 {
				t.Errorf("stripped client_cert headers: got %d, want 3", got)
			}
			if got := r.scrapeCount(t, `admit_server_stripped_headers_total{admit_server_family="scheme"`); got != 2 {
				t.Errorf("stripped scheme headers: got %d, want 2", got)
			}
			if got := r.scrapeCount(t, `admit_server_stripped_headers_total{admit_server_family="address"`); got != 0 {
				t.Errorf("stripped address headers: got %d, want 0 (admit replaces X-Forwarded-For, it is not counted)", got)
			}
		})
	}
}

// TestPassHeaderRefused: --pass-header names a header admit strips and
// does not write itself, or startup stops in the option's words.
func TestPassHeaderRefused(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"X-Request-Id", `admit: --pass-header "X-Request-Id": not a proxy fact admit strips`},
		{"X-Forwarded-Host", `admit: --pass-header "X-Forwarded-Host": admit writes its own`},
		{"X-HTTP-Method-Override", `admit: --pass-header "X-Http-Method-Override": a method override`},
		// The other spellings of a header admit writes are that header to
		// CGI and WSGI servers, and a pattern passes nothing by its name.
		{"X_Forwarded_For", `admit: --pass-header "X_forwarded_for": admit writes its own`},
		{"x_forwarded_host", `admit: --pass-header "X_forwarded_host": admit writes its own`},
		{"X-Forwarded-*", `admit: --pass-header "X-Forwarded-*": a header's name, not a pattern`},
		{"HTTP2-Settings", `admit: --pass-header "Http2-Settings": the parameters of an h2c upgrade`},
		{"X Bad", `"X Bad" is not a header name`},
	} {
		for _, command := range [][]string{nil, {"validate"}, {"explain", "--peer", "192.0.2.1:1"}} {
			args := append(command, "--route", "link=GET /l/{id}", "--pass-header", tc.name)
			if command == nil || command[0] != "explain" {
				args = append(args, "--upstream", "http://127.0.0.1:1")
			} else {
				args = append(args, "GET", "/l/x")
			}
			_, err := runArgs(t, nil, args...)
			var uerr usageError
			if !errors.As(err, &uerr) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("admit %v --pass-header %q: got %v, want a usage error containing %q", command, tc.name, err, tc.want)
			}
		}
	}
}

// TestExplainNamesStrippedFacts: explain says which of the request's
// headers are facts the proxy strips, with their family, and which it
// forwards.
func TestExplainNamesStrippedFacts(t *testing.T) {
	out, err := runArgs(t, nil, "explain", "--peer", "127.0.0.1:1", "--demo", "--trusted-proxy", "127.0.0.1",
		"--pass-header", "X-SSL-Client-Cert", "-H", "X-Proxied-Https: on", "-H", "X-SSL-Client-Cert: c",
		"-H", "SSL_CLIENT_CERT: c", "-H", "X-Forwarded-Proto: https", "-H", "X-Request-Id: 1", "GET", "/l/abc")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"replace  X-Forwarded-Proto (scheme): the upstream gets admit's",
		"strip    X-Proxied-Https (scheme): a client's claim; read as fact by Jetty's ForwardedRequestCustomizer",
		"strip    Ssl_client_cert (client_cert): a client's claim; read as fact by Tomcat's SSLValve",
		"forward  X-Ssl-Client-Cert (client_cert): --pass-header, from a trusted proxy",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "X-Request-Id") {
		t.Errorf("output names X-Request-Id, an ordinary header:\n%s", out)
	}
}

// BenchmarkSkip is the direct path's check of a browser's request headers
// and a few facts, per request.
func BenchmarkSkip(b *testing.B) {
	names := []string{"Accept", "Accept-Encoding", "Accept-Language", "Cache-Control", "Cookie", "Referer",
		"Sec-Fetch-Mode", "Sec-Fetch-Site", "User-Agent", "X-Request-Id", "X-Forwarded-Port", "X_Scheme", "Ssl-Client-Cert"}
	fwd := &forwarder{headerRules: headerRules{stripped: new(strippedCounts)}}
	r := &http.Request{RemoteAddr: "192.0.2.1:1"}
	b.ReportAllocs()
	for b.Loop() {
		for _, name := range names {
			fwd.skip(r, name)
		}
	}
}

// TestForgedTrailersStripped: a fact sent as a request trailer, which a
// server may merge into the request's headers once the body is read, is
// stripped as a header is, and so is its name in the Trailer header, on
// both forwarding paths, for a route whose body admit reads first and for
// a path in no group.
func TestForgedTrailersStripped(t *testing.T) {
	type seen struct {
		announced []string
		trailer   http.Header
	}
	got := make(chan seen, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- seen{announced: r.Header["Trailer"], trailer: r.Trailer.Clone()}
	}))
	t.Cleanup(up.Close)
	forged := []string{"X-Forwarded-For", "X_Forwarded_Proto", "Ssl-Client-Verify", "X-Envoy-Internal"}
	for _, tr := range transports {
		cfg := serverConfig(t, "--upstream", up.URL, "--route", "webhook=POST /hooks/{name}")
		cfg.Transport = tr.new()
		r := startConfig(t, cfg)
		for _, path := range []string{"/hooks/a", "/u/x"} {
			t.Run(tr.name+path, func(t *testing.T) {
				c := dialFrom(t, "127.0.0.1", strings.TrimPrefix(r.url, "http://"))
				c.SetDeadline(time.Now().Add(testTimeout))
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: %s, X-Checksum\r\n\r\n5\r\nhello\r\n0\r\n", path, strings.Join(forged, ", "))
				for _, name := range forged {
					fmt.Fprintf(c, "%s: 6.6.6.6\r\n", name)
				}
				fmt.Fprint(c, "X-Checksum: abc\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("got %d, want 200", resp.StatusCode)
				}
				s := <-got
				for _, name := range forged {
					if v := headerFolded(s.trailer, name); v != nil {
						t.Errorf("upstream received the trailer %s: %q, want it removed", name, v)
					}
					for _, line := range s.announced {
						if strings.Contains(strings.ToLower(line), strings.ToLower(name)) {
							t.Errorf("upstream was announced the trailer %s: Trailer: %q", name, line)
						}
					}
				}
				// net/http's Transport sends a trailer's value only when the
				// body was read before the request was copied: on the route
				// whose body admit reads first.
				if path == "/hooks/a" && s.trailer.Get("X-Checksum") != "abc" {
					t.Errorf("upstream received the trailer X-Checksum: %q, want abc", s.trailer.Get("X-Checksum"))
				}
			})
		}
	}
}
