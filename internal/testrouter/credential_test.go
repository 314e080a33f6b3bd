package testrouter_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
)

// Basic credentials in base64: user:pass fills whole quanta and needs no
// padding, user:pas needs one "=".
const (
	userPass = "dXNlcjpwYXNz"
	userPas  = "dXNlcjpwYXM="
)

// credentialSpellings are spellings of an Authorization header that pass
// Go's server unchanged, so reach an app behind admit as sent, each with
// what Flask and Express read from it: "" for nothing (401). Spellings one
// app reads as the same credential are the ones a proxy keying by
// Authorization must count as one key; a byte an app cannot read only
// loses the client its credential.
var credentialSpellings = []struct {
	name           string
	auth           string
	flask, express string
}{
	{"basic", "Basic " + userPass, "user:pass", "user:pass"},
	{"scheme lowercase", "basic " + userPass, "user:pass", "user:pass"},
	{"scheme uppercase, two spaces", "BASIC  " + userPass, "user:pass", "user:pass"},
	// Werkzeug splits on any whitespace; basic-auth wants spaces.
	{"tab after scheme", "Basic\t" + userPass, "user:pass", ""},
	// Python's b64decode drops every byte outside the alphabet; Node's
	// decoder drops ".", which basic-auth's pattern lets through, but
	// reads "-" and "_" as base64url digits.
	{"dot inside", "Basic dXNl.cjpwYXNz", "user:pass", "user:pass"},
	{"dot after", "Basic " + userPass + ".", "user:pass", "user:pass"},
	{"bang inside", "Basic dXNl!cjpwYXNz", "user:pass", ""},
	{"space inside", "Basic dXNl cjpwYXNz", "user:pass", ""},
	{"dash inside", "Basic dX-NlcjpwYXNz", "user:pass", ""},
	{"needless padding", "Basic " + userPass + "=", "user:pass", "user:pass"},
	{"padded", "Basic " + userPas, "user:pas", "user:pas"},
	{"padding left out", "Basic " + strings.TrimRight(userPas, "="), "", "user:pas"},
	// Werkzeug decodes the header's bytes as UTF-8, so a lone \xa0 or
	// \x85 becomes U+FFFD, no space; JavaScript's trim takes \xa0 for a
	// space but not \x85, which leaves basic-auth's pattern unmatched
	// and the scheme unknown, so the base64 is read as a token.
	{"leading \\xa0", "\xa0Basic " + userPass, "", ""},
	{"trailing \\xa0", "Basic " + userPass + "\xa0", "", ""},
	{"\\xa0 after scheme", "Basic\xa0" + userPass, "", ""},
	{"leading \\x85", "\x85Basic " + userPass, "", userPass},
	{"trailing \\x85", "Basic " + userPass + "\x85", "", ""},
	// In UTF-8 they are U+00A0 and U+0085, which Python's split takes for
	// spaces and b64decode refuses; Node reads header bytes as Latin-1, so
	// to Express the scheme starts with "Â" and is unknown.
	{"leading UTF-8 NBSP", "\u00a0Basic " + userPass, "user:pass", userPass},
	{"leading UTF-8 NEL", "\u0085Basic " + userPass, "user:pass", userPass},
	{"UTF-8 NBSP after scheme", "Basic\u00a0" + userPass, "user:pass", ""},
	{"trailing UTF-8 NBSP", "Basic " + userPass + "\u00a0", "", ""},

	{"bearer", "Bearer tok", "tok", "tok"},
	{"token", "Token tok", "tok", "tok"},
	{"jwt", "JWT tok", "tok", "tok"},
	{"scheme lowercase, token", "bearer tok", "tok", "tok"},
	// Flask-HTTPAuth's split(None, 1) on a Werkzeug before 2.3 takes
	// any run of whitespace, and keeps the rest whole; the word after the
	// first space is empty after two.
	{"two spaces", "Bearer  tok", "tok", ""},
	{"tab", "Bearer\ttok", "tok", ""},
	{"\\xa0 after scheme, token", "Bearer\xa0tok", "tok", ""},
	{"two words", "Bearer tok x", "tok x", "tok"},
	{"leading \\xa0, token", "\xa0Bearer tok", "tok", "tok"},
	{"trailing \\xa0, token", "Bearer tok\xa0", "tok\u00a0", "tok"},
	{"leading \\x85, token", "\x85Bearer tok", "tok", "tok"},
	{"trailing \\x85, token", "Bearer tok\x85", "tok\u0085", "tok\u0085"},
}

// goRefused are spellings Go's server answers 400, so no app behind admit
// sees them, whatever it would make of them: control bytes other than tab,
// among them \v, \f and \x1c-\x1f, which Python's split takes for spaces.
var goRefused = []string{
	"Basic\v" + userPass,
	"Basic\f" + userPass,
	"Basic\x1c" + userPass,
	"\x1fBasic " + userPass,
	"Basic " + userPass + "\x7f",
}

func TestCredentialSpellings(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		goServer := echoAuthorization(t)
		for _, tc := range credentialSpellings {
			if status, got := send(t, goServer, "GET / HTTP/1.1", "Authorization: "+tc.auth); status != http.StatusOK || got != tc.auth {
				t.Errorf("%s: Go's server answered %d and saw %q, want 200 and %q unchanged", tc.name, status, got, tc.auth)
			}
		}
		for _, auth := range goRefused {
			if status, got := send(t, goServer, "GET / HTTP/1.1", "Authorization: "+auth); status != http.StatusBadRequest {
				t.Errorf("%q: Go's server answered %d %q, want 400", auth, status, got)
			}
		}
	})
	for _, kind := range []testrouter.Kind{testrouter.Flask, testrouter.Express} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			r := testrouter.Start(t, kind)
			missesLimited(t, r, http.StatusUnauthorized, "GET /a HTTP/1.1")
			for _, tc := range credentialSpellings {
				want := tc.flask
				if kind == testrouter.Express {
					want = tc.express
				}
				if got := credential(t, r, tc.auth); got != want {
					t.Errorf("%s: %s read %q from %q, want %q", tc.name, kind, got, tc.auth, want)
				}
			}
		})
	}
}

// credential sends GET /a with the Authorization value auth to r, and
// returns the credential the app read, or "" when it read none; the
// limited counter must count exactly the reads.
func credential(t *testing.T, r *testrouter.Router, auth string) string {
	t.Helper()
	r.Reset(t)
	status, body := send(t, r, "GET /a HTTP/1.1", "Authorization: "+auth)
	got, hits := "", 0
	switch {
	case status == http.StatusUnauthorized && body == "no credential\n":
	case status == http.StatusOK && strings.HasPrefix(body, "credential ") && strings.HasSuffix(body, "\n"):
		got, hits = strings.TrimSuffix(strings.TrimPrefix(body, "credential "), "\n"), 1
	default:
		t.Errorf("%s: %q answered %d %q, want 200 with the credential or 401", r.Kind, auth, status, body)
	}
	if n := r.Hits(t); n != hits {
		t.Errorf("%s: %q: limited handler ran %d times, want %d", r.Kind, auth, n, hits)
	}
	return got
}

// echoAuthorization starts a Go server that answers with the Authorization
// header it read, and returns it as a Router for send, which needs only its
// URL.
func echoAuthorization(t *testing.T) *testrouter.Router {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Header.Get("Authorization")))
	}))
	t.Cleanup(srv.Close)
	return &testrouter.Router{URL: srv.URL, Kind: "go"}
}
