package canon

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
	"testing"
)

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		slashes Slashes
		want    string
		err     error
	}{
		{"/", Reject, "/", nil},
		{"/l/x", Reject, "/l/x", nil},
		{"/l/x/", Reject, "/l/x/", nil},
		{"//l//x", Reject, "/l/x", nil},
		{"/l/x//", Reject, "/l/x/", nil},
		{"/l/./x", Reject, "/l/x", nil},
		{"/l/../l/x", Reject, "/l/x", nil},
		{"/l/%2e%2e/l/x", Reject, "/l/x", nil},
		{"/l/%2E%2e/l/x", Reject, "/l/x", nil},
		{"/l/.%2e/l/x", Reject, "/l/x", nil},
		{"/../../x", Reject, "/x", nil},
		{"/a/b/..", Reject, "/a/", nil},
		{"/a/b/.", Reject, "/a/b/", nil},
		{"/a/..", Reject, "/", nil},
		{"/..", Reject, "/", nil},
		{"/a/...", Reject, "/a/...", nil},
		{"/a/..b/.c", Reject, "/a/..b/.c", nil},
		{"/%6C/x", Reject, "/l/x", nil},
		{"/%4c/%78", Reject, "/L/x", nil},
		{"/a%7e%2D%5f", Reject, "/a~-_", nil},
		{"/a%3f", Reject, "/a%3F", nil},
		{"/a%3F", Reject, "/a%3F", nil},
		{"/a%25", Reject, "/a%25", nil},
		{"/caf%c3%a9", Reject, "/caf%C3%A9", nil},
		{"/caf\xc3\xa9", Reject, "/caf%C3%A9", nil},
		{"/a{b}|c^d`e\"f<g>[h]", Reject, "/a%7Bb%7D%7Cc%5Ed%60e%22f%3Cg%3E%5Bh%5D", nil},
		{"/a;b=c,d@e:f!$&'()*+", Reject, "/a;b=c,d@e:f!$&'()*+", nil},
		{"/l%2Fx", Reject, "", ErrEncodedSlash},
		{"/l%2fx", Reject, "", ErrEncodedSlash},
		{"/l%5Cx", Reject, "", ErrEncodedSlash},
		{"/l%5cx", Reject, "", ErrEncodedSlash},
		{"/l\\x", Reject, "", ErrEncodedSlash},
		{"/l/x%2F", Reject, "", ErrEncodedSlash},
		{"/l%2Fx", Decode, "/l/x", nil},
		{"/l%5Cx", Decode, "/l/x", nil},
		{"/l\\x", Decode, "/l/x", nil},
		{"/l/x%2F", Decode, "/l/x/", nil},
		{"/l%2F%2Fx", Decode, "/l/x", nil},
		{"/l/%2e%2e%2Fl%2Fx", Decode, "/l/x", nil},
		{"/a%2F..%2Fb", Decode, "/b", nil},
		{"/l%2fx", Keep, "/l%2Fx", nil},
		{"/l%5cx", Keep, "/l%5Cx", nil},
		{"/l\\x", Keep, "/l%5Cx", nil},
		{"/a%2F..%2Fb", Keep, "/a%2F..%2Fb", nil},
		{"/a%", Reject, "", ErrBadEscape},
		{"/a%4", Reject, "", ErrBadEscape},
		{"/a%zz", Reject, "", ErrBadEscape},
		{"/a%00", Reject, "", ErrNUL},
		{"/a\x00", Reject, "", ErrNUL},
		{"", Reject, "", ErrTarget},
		{"l/x", Reject, "", ErrTarget},
	} {
		got, err := Path(tc.raw, tc.slashes)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Path(%q, %v): got %q, %v, want %q, %v", tc.raw, tc.slashes, got, err, tc.want, tc.err)
		}
	}
}

func TestHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		tls  bool
		want string
	}{
		{"example.com", false, "example.com"},
		{"EXAMPLE.COM", false, "example.com"},
		{"Example.com.", false, "example.com"},
		{"example.com.:80", false, "example.com"},
		{"example.com:80", false, "example.com"},
		{"example.com:443", false, "example.com:443"},
		{"example.com:443", true, "example.com"},
		{"example.com:80", true, "example.com:80"},
		{"example.com:", false, "example.com"},
		{"example.com:8080", false, "example.com:8080"},
		{"[::1]", false, "[::1]"},
		{"[::1]:80", false, "[::1]"},
		{"[FE80::1]:8080", false, "[fe80::1]:8080"},
		{"", false, ""},
	} {
		if got := Host(tc.host, tc.tls); got != tc.want {
			t.Errorf("Host(%q, tls %v): got %q, want %q", tc.host, tc.tls, got, tc.want)
		}
	}
}

func TestMethod(t *testing.T) {
	for _, tc := range []struct {
		method string
		want   error
	}{
		{"GET", nil}, {"POST", nil}, {"PROPFIND", nil}, {"M-SEARCH", nil},
		{"get", ErrMethod}, {"Get", ErrMethod}, {"gET", ErrMethod}, {"", ErrMethod},
	} {
		if err := Method(tc.method); !errors.Is(err, tc.want) {
			t.Errorf("Method(%q): got %v, want %v", tc.method, err, tc.want)
		}
	}
}

// wire builds a request as net/http's server would from a request line.
func wire(t *testing.T, method, target, host string) *http.Request {
	t.Helper()
	u, err := url.ParseRequestURI(target)
	if err != nil {
		t.Fatalf("ParseRequestURI(%q): %v", target, err)
	}
	if u.Host != "" {
		host = u.Host
	}
	return &http.Request{Method: method, RequestURI: target, URL: u, Host: host, Header: http.Header{}}
}

func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		method, target, host string
		wantPath, wantURI    string // URL.EscapedPath() and RequestURI
		wantHost             string
		err                  error
	}{
		{"GET", "/l/x", "a", "/l/x", "/l/x", "a", nil},
		{"GET", "/l/x?q=%2F", "a", "/l/x", "/l/x?q=%2F", "a", nil},
		{"GET", "/l/%2e%2e/l/%78?b", "a", "/l/x", "/l/x?b", "a", nil},
		{"GET", "//l//x", "EXAMPLE.com.", "/l/x", "/l/x", "example.com", nil},
		{"GET", "/l/x", "Example.com:80", "/l/x", "/l/x", "example.com", nil},
		{"GET", "http://EXAMPLE.COM:80/l/x?q", "other", "/l/x", "/l/x?q", "example.com", nil},
		{"GET", "http://example.com", "other", "/", "/", "example.com", nil},
		{"GET", "http://example.com?q", "other", "/", "/?q", "example.com", nil},
		{"GET", "/l%2Fx", "a", "", "", "", ErrEncodedSlash},
		{"GET", "/l/x#f", "a", "", "", "", ErrFragment},
		{"GET", "/l/x?a#f", "a", "", "", "", ErrFragment},
		{"get", "/l/x", "a", "", "", "", ErrMethod},
		{"GET", "*", "a", "", "", "", ErrTarget},
		{"CONNECT", "/x", "a", "", "", "", ErrConnect},
	} {
		r := wire(t, tc.method, tc.target, tc.host)
		before := *r.URL
		got, err := Request(r, Options{})
		if !errors.Is(err, tc.err) {
			t.Errorf("%s %s: got error %v, want %v", tc.method, tc.target, err, tc.err)
			continue
		}
		if *r.URL != before {
			t.Errorf("%s %s: the request's own URL changed to %+v", tc.method, tc.target, *r.URL)
		}
		if err != nil {
			continue
		}
		if p := got.URL.EscapedPath(); p != tc.wantPath || got.RequestURI != tc.wantURI || got.Host != tc.wantHost {
			t.Errorf("%s %s host %s: got path %q, target %q, host %q; want %q, %q, %q",
				tc.method, tc.target, tc.host, p, got.RequestURI, got.Host, tc.wantPath, tc.wantURI, tc.wantHost)
		}
		if got.URL.Host != "" || got.URL.Scheme != "" {
			t.Errorf("%s %s: URL keeps scheme %q and host %q, want origin-form", tc.method, tc.target, got.URL.Scheme, got.URL.Host)
		}
	}
}

func TestRequestKeepsCanonicalRequest(t *testing.T) {
	r := wire(t, "GET", "/l/x?q=1", "example.com")
	if got, err := Request(r, Options{}); err != nil || got != r {
		t.Fatalf("Request of a canonical request: got %p, %v, want the request itself (%p)", got, err, r)
	}
	r.TLS = &tls.ConnectionState{}
	r.Host = "example.com:443"
	if got, _ := Request(r, Options{}); got == r || got.Host != "example.com" {
		t.Fatalf("Request with TLS and :443: got host %q, want a copy with host example.com", got.Host)
	}
}

func TestRequestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts; scripts/test runs this without it")
	}
	r := wire(t, "POST", "/hooks/github/events?x=1", "example.com")
	if n := testing.AllocsPerRun(100, func() { _, _ = Request(r, Options{}) }); n != 0 {
		t.Errorf("Request of a canonical request: got %v allocations, want 0", n)
	}
}

func BenchmarkRequest(b *testing.B) {
	for _, bc := range []struct{ name, target string }{
		{"canonical", "/hooks/github/events"},
		{"dots", "/hooks/./github/../github/%65vents"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			u, _ := url.ParseRequestURI(bc.target)
			r := &http.Request{Method: "POST", RequestURI: bc.target, URL: u, Host: "example.com"}
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Request(r, Options{})
			}
		})
	}
}
