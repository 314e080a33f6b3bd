package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// credentialRespellings are spellings of the Basic credential user:pass
// (dXNlcjpwYXNz) and the token tok that Flask or Express read as that
// credential, or as none (see internal/testrouter's credential tests),
// and that Go's server passes on unchanged.
var credentialRespellings = []string{
	"Basic dXNlcjpwYXNz", "basic dXNlcjpwYXNz", "BASIC  dXNlcjpwYXNz", "Basic\tdXNlcjpwYXNz",
	"Basic dXNl.cjpwYXNz", "Basic dXNlcjpwYXNz.", "Basic dXNl!cjpwYXNz", "Basic dXNl cjpwYXNz",
	"Basic dX-NlcjpwYXNz", "Basic dXNlcjpwYXNz=",
	"\xa0Basic dXNlcjpwYXNz", "Basic dXNlcjpwYXNz\xa0", "Basic\xa0dXNlcjpwYXNz", "\x85Basic dXNlcjpwYXNz",
	"Basic dXNlcjpwYXNz\x85", "\u00a0Basic dXNlcjpwYXNz", "\u0085Basic dXNlcjpwYXNz",
	"Basic\u00a0dXNlcjpwYXNz", "Basic dXNlcjpwYXNz\u00a0",
	"Bearer tok", "Token tok", "JWT tok", "bearer tok", "Bearer  tok", "Bearer\ttok", "Bearer\xa0tok",
	"Bearer tok x", "\xa0Bearer tok", "Bearer tok\xa0", "\x85Bearer tok", "Bearer tok\x85",
}

// TestCredentialMatrix puts admit, keying a route by Authorization, in
// front of Flask and Express apps that read the credential as apps
// usually do, and sends every spelling of one credential from its own
// address: however the app reads them, no credential it reads runs the
// handler more often than one budget allows.
func TestCredentialMatrix(t *testing.T) {
	const burst, sent = 3, 2
	cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: token, pattern: "GET /a"}
budgets:
  token: {like: link, rate: 0.001, burst: %d, key: "header:Authorization", key_authenticated: true, per_client: 100, inflight: 100}
`, burst))
	for _, kind := range []testrouter.Kind{testrouter.Flask, testrouter.Express} {
		up := testrouter.Start(t, kind)
		r := start(t, "--upstream", up.URL, "--config", cfg)
		addr := strings.TrimPrefix(r.url, "http://")
		read := map[string]int{} // credential the app read -> times its handler ran for it
		answers := map[int]int{} // admit's answers
		for i, auth := range credentialRespellings {
			for n := range sent {
				a := rawFrom(t, fmt.Sprintf("127.1.%d.%d", i, n+1), addr,
					"GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "+auth+"\r\nConnection: close\r\n\r\n")
				answers[a.status]++
				if cred, ok := strings.CutPrefix(a.body, "credential "); ok && a.status == http.StatusOK {
					read[strings.TrimSuffix(cred, "\n")]++
				}
			}
		}
		for cred, n := range read {
			if n > burst {
				t.Errorf("%s: the app read credential %q %d times, want at most one budget's burst, %d", kind, cred, n, burst)
			}
		}
		if read["user:pass"] != burst || read["tok"] != burst {
			t.Errorf("%s: user:pass read %d times and tok %d times, want the burst, %d, each", kind, read["user:pass"], read["tok"], burst)
		}
		t.Logf("%s: %d spellings, %d requests each: admit answered %s; the app read %v", kind, len(credentialRespellings), sent, summarise(answers), read)
	}
}
