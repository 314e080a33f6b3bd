package routes

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/internal/pipelisten"
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
		got, err := paramMethods(httptest.NewRecorder(), r, Generic.mappings(), others)
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

// TestFormBodyTimeout: a form body that stops coming is read under
// formScanRule, the door's rule for the webhook group, and cut when its
// grace ends with too few bytes; the request is then refused with
// ErrFormBody, under net/http's server: a client cannot hold the front by
// sending the body a _method may be in slowly. A body that arrives within
// the grace is read.
func TestFormBodyTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pause   time.Duration // before the body's last byte; 0: it never comes
		wantErr error
		wait    time.Duration // how long paramMethods took
	}{
		// 13 bytes buy 26 ms past the 5 s grace at 500 bytes a second.
		{"stops coming", 0, ErrFormBody, formScanRule.Grace + 26*time.Millisecond},
		{"slow but in time", formScanRule.Grace - time.Second, nil, formScanRule.Grace - time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				type result struct {
					methods []string
					err     error
					took    time.Duration
				}
				got := make(chan result, 1)
				ln := pipelisten.New()
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					start := time.Now()
					ms, err := paramMethods(w, r, Generic.mappings(), []string{"DELETE"})
					got <- result{ms, err, time.Since(start)}
				})}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
				client := ln.Dial()
				defer client.Close()
				go func() { _, _ = io.Copy(io.Discard, client) }()
				body := "_method=DELETE"
				head := "POST /l/abc HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
					"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
				if _, err := io.WriteString(client, head+body[:len(body)-1]); err != nil {
					t.Fatal(err)
				}
				if tc.pause > 0 {
					time.Sleep(tc.pause)
					if _, err := io.WriteString(client, body[len(body)-1:]); err != nil {
						t.Fatal(err)
					}
				}
				r := <-got
				if !errors.Is(r.err, tc.wantErr) {
					t.Errorf("err: got %v, want %v", r.err, tc.wantErr)
				}
				if r.took != tc.wait {
					t.Errorf("took %v, want %v", r.took, tc.wait)
				}
				if tc.wantErr == nil && !slices.Equal(r.methods, []string{"DELETE"}) {
					t.Errorf("methods: got %v, want [DELETE]", r.methods)
				}
			})
		})
	}
}
