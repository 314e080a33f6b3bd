package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParamMethods reads _method as the frameworks respell it: any
// parameter whose name holds "method" names a method, a plain form is read
// pair by pair, and any other body that could name one limits the request
// under every method the routes name.
func TestParamMethods(t *testing.T) {
	others := []string{"DELETE", "GET"}
	mp := "--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--b--\r\n"
	const F = "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		name, contentType, body, query string
		want                           []string
	}{
		{"plain", F, "_method=DELETE", "", []string{"DELETE"}},
		{"lower case", F, "_method=delete", "", []string{"DELETE"}},
		{"no type", "", "_method=DELETE", "", []string{"DELETE"}},
		{"brackets", F, "[_method]=DELETE", "", []string{"DELETE"}},
		{"dot", F, ".method=DELETE", "", []string{"DELETE"}},
		{"spaces", F, "%20%20_method=DELETE", "", []string{"DELETE"}},
		{"NUL", F, "_method%00x=DELETE", "", []string{"DELETE"}},
		{"array", F, "_method[]=DELETE", "", []string{"DELETE"}},
		{"semicolons", F, "a=1;_method=DELETE", "", []string{"DELETE"}},
		{"another field", F, "payment_method=credit card&x=1", "", nil},
		{"no method", F, "a=1&b=2", "", nil},
		{"a loose type", F + ", text/plain", "_method=DELETE", "", []string{"DELETE"}},
		{"an EBCDIC form", F + "; charset=ibm037", "\x6d\x94\x85\xa3\x88\x96\x84=\xc4\xc5\xd3\xc5\xe3\xc5", "", others},
		{"multipart", "multipart/form-data; boundary=b", mp, "", others},
		{"multipart/mixed", "multipart/mixed; boundary=b", mp, "", others},
		{"multipart without it", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--\r\n", "", nil},
		{"JSON", "application/json", `{"_method":"DELETE"}`, "", others},
		{"JSON escaped", "application/json", `{"_\u006dethod":"DELETE"}`, "", others},
		{"JSON without it", "application/json", `{"a":1}`, "", nil},
		{"too long", F, "a=" + strings.Repeat("x", formScanBytes), "", others},
		{"many methods", F, "_method=A&_method=B&_method=C&_method=D", "", others},
		{"query", "", "", "_method=DELETE", []string{"DELETE"}},
		{"query escaped", "", "", "_%6Dethod=DELETE", []string{"DELETE"}},
		{"query upper case", "", "", "_METHOD=delete", []string{"DELETE"}},
	} {
		target := "/l/abc"
		if tc.query != "" {
			target += "?" + tc.query
		}
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(tc.body))
		if tc.body == "" {
			r.Body = http.NoBody
		}
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		got, err := paramMethods(httptest.NewRecorder(), r, profileGeneric.mappings(), others)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
		if tc.body != "" {
			if rest, _ := bodyLeft(r); rest != tc.body {
				t.Errorf("%s: the body handed on is %q, want it unchanged", tc.name, rest)
			}
		}
	}
}

// bodyLeft reads what is left of r's body.
func bodyLeft(r *http.Request) (string, error) {
	b, err := io.ReadAll(r.Body)
	return string(b), err
}

// TestFormBodyBreaksOff sends form bodies that end before their
// Content-Length: on a path a _method could take to a limited route the
// front must read the body first, and refuses it (form_body) rather than
// guess; on a path no method reaches, the body is not read before routing
// and the request goes on to the upstream as it would without admit.
func TestFormBodyBreaksOff(t *testing.T) {
	rec := newRecorder(t)
	cfg := writeConfig(t, `
routes:
  - {group: link, pattern: "GET /l/{id}"}
`)
	r := start(t, "--upstream", rec.url, "--config", cfg)
	addr := strings.TrimPrefix(r.url, "http://")
	for _, tc := range []struct {
		path    string
		refused bool
	}{
		{"/l/abc", true},   // _method=GET would reach GET /l/{id}
		{"/upload", false}, // no route: forwarded, and the upstream sees the body break off
	} {
		c, err := net.DialTimeout("tcp", addr, testTimeout)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(testTimeout))
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n_method=GE", tc.path)
		c.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		resp.Body.Close()
		c.Close()
		if refused := resp.StatusCode == http.StatusBadRequest; refused != tc.refused {
			t.Errorf("%s with a body that breaks off: got %d, want it refused with 400: %v", tc.path, resp.StatusCode, tc.refused)
		}
	}
	if got := r.scrapeCount(t, `admit_server_malformed_total{admit_server_reason="form_body"`); got != 1 {
		t.Errorf("form_body refusals: got %d, want 1", got)
	}
}
