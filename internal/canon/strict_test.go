package canon

import (
	"errors"
	"testing"
)

func TestStrictClasses(t *testing.T) {
	for _, tc := range []struct {
		target, host string
		allow        Classes
		err          error
		wantURI      string // when err is nil
	}{
		{"/l/abc", "a", 0, nil, "/l/abc"},
		{"/l;x/abc", "a", 0, ErrPathParameter, ""},
		{"/;x/l/abc", "a", 0, ErrPathParameter, ""},
		{"/x/..;/l/abc", "a", 0, ErrPathParameter, ""},
		{"/l/abc;jsessionid=1", "a", 0, ErrPathParameter, ""},
		{"/l%3Bx/abc", "a", 0, ErrPathParameter, ""},
		{"/l%3bx/abc", "a", 0, ErrPathParameter, ""},
		{"/l/abc?a;b", "a", 0, nil, "/l/abc?a;b"}, // the query is not routed
		{"/l;x/abc", "a", Classes(PathParameter), nil, "/l;x/abc"},
		{"/l%3bx/abc", "a", Classes(PathParameter), nil, "/l%3Bx/abc"},
		{"/l%252Fabc", "a", 0, ErrEncodedPercent, ""},
		{"/%256c/abc", "a", 0, ErrEncodedPercent, ""},
		{"/l%252Fabc", "a", Classes(EncodedPercent), nil, "/l%252Fabc"},
		{"/l%252Fabc%25", "a", Classes(EncodedPercent), ErrEncodedPercent, ""},
		{"/l%252Fabc%25zz", "a", Classes(EncodedPercent), ErrEncodedPercent, ""},
		{"/l%252Fabc%2500", "a", Classes(EncodedPercent), ErrNUL, ""},
		{"/l/abc%250D%250A", "a", Classes(EncodedPercent), ErrControl, ""},
		{"/l/abc%250D%250A", "a", Classes(EncodedPercent | Control), nil, "/l/abc%250D%250A"},
		{"/l/abc%253F/x", "a", Classes(EncodedPercent), ErrDelimiter, ""},
		{"/l/abc%25253F", "a", Classes(EncodedPercent), ErrEncodedPercent, ""},
		{"/l/abc%3F/zzz", "a", 0, ErrDelimiter, ""},
		{"/l/abc%23/zzz", "a", 0, ErrDelimiter, ""},
		{"/l/abc%3f/zzz", "a", Classes(EncodedDelimiter), nil, "/l/abc%3F/zzz"},
		{"/l/abc%0A", "a", 0, ErrControl, ""},
		{"/l/abc%09", "a", 0, ErrControl, ""},
		{"/l/abc%7f", "a", 0, ErrControl, ""},
		{"/l/abc%0a", "a", Classes(Control), nil, "/l/abc%0A"},
		{"/l/abc%00", "a", Classes(Control), nil, ""}, // NUL is never allowed: checked below
		{"/l/caf\xc3\xa9", "a", 0, ErrNonASCII, ""},
		{"/l/caf%C3%A9", "a", 0, nil, "/l/caf%C3%A9"},
		{"/l/caf%c3%a9", "a", 0, nil, "/l/caf%C3%A9"},
		{"/l/%FF", "a", 0, ErrNonASCII, ""},
		{"/l/%C3", "a", 0, ErrNonASCII, ""},
		{"/l/%C0%AF", "a", 0, ErrNonASCII, ""}, // overlong '/'
		{"/l/%FF", "a", Classes(NonASCII), nil, "/l/%FF"},
		{"/l/abc", "x,example.com", 0, ErrHost, ""},
		{"/l/abc", "example.com, x", 0, ErrHost, ""},
		{"/l/abc", "example.com:80:80", 0, ErrHost, ""},
		{"/l/abc", "example.com:99999", 0, ErrHost, ""},
		{"/l/abc", "exa mple.com", 0, ErrHost, ""},
		{"/l/abc", "user@example.com", 0, ErrHost, ""},
		{"/l/abc", "example.com:http", 0, ErrHost, ""},
		{"/l/abc", ":8080", 0, ErrHost, ""},
		{"/l/abc", "[::1", 0, ErrHost, ""},
		{"/l/abc", "[fe80::1%25eth0]", 0, ErrHost, ""},
		{"/l/abc", "x,example.com", Classes(BadHost), nil, "/l/abc"},
		{"/l/abc", "Example.COM:8080", 0, nil, "/l/abc"},
		{"/l/abc", "[::1]:8080", 0, nil, "/l/abc"},
		{"/l/abc", "10.0.0.1", 0, nil, "/l/abc"},
		{"/l/abc", "in_ternal.example", 0, nil, "/l/abc"},
		{"/l/abc", "", 0, nil, "/l/abc"},
	} {
		r := wire(t, "GET", tc.target, tc.host)
		got, err := Request(r, Options{Allow: tc.allow})
		if tc.target == "/l/abc%00" {
			if !errors.Is(err, ErrNUL) {
				t.Errorf("%q: got %v, want %v whatever is allowed", tc.target, err, ErrNUL)
			}
			continue
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%q host %q allowing %v: got error %v, want %v", tc.target, tc.host, tc.allow, err, tc.err)
			continue
		}
		if err == nil && got.RequestURI != tc.wantURI {
			t.Errorf("%q host %q allowing %v: got target %q, want %q", tc.target, tc.host, tc.allow, got.RequestURI, tc.wantURI)
		}
	}
}

func TestParseClasses(t *testing.T) {
	for _, c := range classes {
		got, err := ParseClasses(c.String())
		if err != nil || got != Classes(c) {
			t.Errorf("ParseClasses(%q) = %v, %v; want %v", c.String(), got, err, c)
		}
	}
	all, err := ParseClasses("path_parameter, encoded_percent,control non_ascii,encoded_delimiter,host")
	if err != nil || all.String() != "path_parameter,encoded_percent,control,non_ascii,encoded_delimiter,host" {
		t.Errorf("ParseClasses of every class: got %v, %v", all, err)
	}
	if s, err := ParseClasses("none"); err != nil || s != 0 || s.String() != "none" {
		t.Errorf("ParseClasses(none) = %v, %v; want the empty set", s, err)
	}
	if _, err := ParseClasses("semicolon"); err == nil {
		t.Error("ParseClasses(semicolon): got no error")
	}
}

func TestStrictRequestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts; scripts/test runs this without it")
	}
	for _, target := range []string{"/hooks/github/events?x=1", "/l/caf%C3%A9"} {
		r := wire(t, "GET", target, "example.com:8080")
		if n := testing.AllocsPerRun(100, func() { _, _ = Request(r, Options{}) }); n != 0 {
			t.Errorf("Request(%q): got %v allocations, want 0", target, n)
		}
	}
}
