package opshost

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var listed = []string{"admit.internal", "ops.example"}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.0.0.1:9464", true},
		{"10.1.2.3:80", true},
		{"[::1]", true},
		{"[::1]:9464", true},
		{"[::1]:", true}, // RFC 3986 allows an empty port
		{"[2001:db8::7]:9464", true},
		{"::1", true}, // bare, as no browser sends it; an address all the same
		{"localhost", true},
		{"localhost:9464", true},
		{"LocalHost.", true},
		{"localhost.:9464", true},
		{"foo.localhost", true},
		{"a.b.localhost:1", true},
		{"admit.internal", true},
		{"ADMIT.Internal.:443", true},
		{"ops.example", true},

		{"", false},
		{":9464", false},
		{"rebind.attacker.example", false},
		{"rebind.attacker.example:9464", false},
		{"localhost.attacker.example", false},
		{"xlocalhost", false},
		{".localhost", false},
		{"foo..localhost", false},
		{"localhost..", false},
		{"127.0.0.1.nip.io", false},
		{"admit.internal.attacker.example", false},
		{"sub.admit.internal", false},
		{"[127.0.0.1]", false},
		{"[::1", false},
		{"[::1]x", false},
		{"[::1]:80:80", false},
		{"[::1]:http", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1:123456", false},
		{"localhost:80:80", false},
		{"0x7f.0.0.1", false},
		{"127.1", false},
		{"local host", false},
		{"localhost/", false},
		{"lo\u212Aalhost", false}, // KELVIN SIGN folds to k under Unicode rules
		{"admit.\u212Anternal", false},
	} {
		if got := Allowed(tc.host, listed); got != tc.want {
			t.Errorf("Allowed(%q): got %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestParseNames(t *testing.T) {
	got, err := ParseNames("Admit.Internal., ops.example\tmetrics_1.example")
	if want := "admit.internal ops.example metrics_1.example"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("got %q, %v; want %s", got, err, want)
	}
	for _, bad := range []string{"", " , ", "http://admit.internal", "admit.internal:9464", "*.example", "[::1]", "a..b", "é.example"} {
		if got, err := ParseNames(bad); !errors.Is(err, ErrName) {
			t.Errorf("ParseNames(%q): got %q, %v; want ErrName", bad, got, err)
		}
	}
}

func TestHandler(t *testing.T) {
	refused := 0
	h := &Handler{Names: listed, Refused: func() { refused++ },
		Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })}
	for _, tc := range []struct {
		host, want string
		code       int
	}{
		{"127.0.0.1:9464", "served", http.StatusOK},
		{"admit.internal", "served", http.StatusOK},
		{"rebind.attacker.example", Refusal, http.StatusMisdirectedRequest},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Host = tc.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code || w.Body.String() != tc.want {
			t.Errorf("Host %q: got %d %q, want %d %q", tc.host, w.Code, w.Body, tc.code, tc.want)
		}
	}
	if refused != 1 {
		t.Errorf("refused: got %d, want 1", refused)
	}
}

// FuzzAllowed holds Allowed to what it promises whatever the Host: case
// and one trailing dot never change the answer, and a Host it lets through
// is an address, a name under localhost or a listed name.
func FuzzAllowed(f *testing.F) {
	for _, seed := range []string{
		"127.0.0.1:9464", "[::1]:9464", "localhost", "foo.localhost.", "admit.internal", // allowed
		"rebind.attacker.example", "[::1", "127.0.0.1:http", "lo\u212Aalhost", // refused
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, host string) {
		got := Allowed(host, listed)
		if upper := strings.ToUpper(host); isASCII(host) && Allowed(upper, listed) != got {
			t.Fatalf("Allowed(%q) = %v but Allowed(%q) = %v", host, got, upper, !got)
		}
		if !got {
			return
		}
		if strings.ContainsAny(host, "/?#@ \t\r\n") {
			t.Fatalf("Allowed(%q): a delimiter passed", host)
		}
		h, _ := cutPort(host)
		name, isName := normalise(h)
		if isName && name != "localhost" && !strings.HasSuffix(name, ".localhost") && name != listed[0] && name != listed[1] {
			if _, ok := cutPort(host); !ok || strings.Trim(name, "0123456789.") != "" {
				t.Fatalf("Allowed(%q): %q is no address, no localhost name and not listed", host, name)
			}
		}
	})
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
