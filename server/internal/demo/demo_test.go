package demo

import (
	"net/http"
	"strings"
	"testing"
)

// TestApp answers a delivery signed with Signature, refuses one that is
// not with 401, and answers its link and health routes.
func TestApp(t *testing.T) {
	app, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for _, tc := range []struct {
		method, path, signature string
		want                    int
	}{
		{"POST", "/hooks/demo", Signature([]byte(Body)), 200},
		{"POST", "/hooks/demo", Signature([]byte("other")), 401},
		{"POST", "/hooks/demo", "", 401},
		{"GET", "/l/abc", "", 200},
		{"GET", HealthPath, "", 200},
	} {
		req, err := http.NewRequest(tc.method, app.URL+tc.path, strings.NewReader(Body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.signature != "" {
			req.Header.Set(SignatureHeader, tc.signature)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s, signature %q: got %d, want %d", tc.method, tc.path, tc.signature, resp.StatusCode, tc.want)
		}
	}
}
