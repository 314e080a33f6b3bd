package routes

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/canon"
)

// The frameworks' readings of a raw path, written apart from admit's
// canonical form and profiles, as each framework documents them: the fuzz
// target below checks that whatever path a framework routes to the limited
// handler of /l/{id}, admit either refuses the request or limits it.

// removeDots resolves dot segments and merges slashes in a decoded path.
func removeDots(p string) string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// servletPath is Tomcat's: parameters cut from every raw segment, then
// decoded, then dot segments resolved.
func servletPath(raw string) (string, bool) {
	segs := strings.Split(raw, "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ';'); j >= 0 {
			segs[i] = s[:j]
		}
	}
	p, err := url.PathUnescape(strings.Join(segs, "/"))
	return removeDots(p), err == nil
}

// railsPath is ActionDispatch's: decoded, slashes merged, a trailing slash
// dropped, and the last segment cut at its first dot (the format).
func railsPath(raw string) (string, bool) {
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", false
	}
	p = removeDots(p)
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		if j := strings.IndexByte(p[i:], '.'); j >= 0 {
			p = p[:i+j]
		}
	}
	return p, true
}

// phpPath is a front controller's path info: what follows the first
// segment ending in ".php".
func phpPath(raw string) (string, bool) {
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", false
	}
	p = removeDots(p)
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasSuffix(strings.ToLower(s), ".php") {
			return "/" + strings.Join(segs[i+1:], "/"), true
		}
	}
	return p, true
}

// hopPath is Flask behind nginx's proxy_pass $uri: decoded and resolved by
// nginx, sent on raw up to a decoded '?' or '#', then decoded again by
// Werkzeug, which leaves an escape it cannot read as it is.
func hopPath(raw string) (string, bool) {
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", false
	}
	p = removeDots(p)
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return lenientUnescape(p), true
}

// lenientUnescape decodes every escape of two hex digits and leaves any
// other '%' as it is, as Python's urllib.parse.unquote does.
func lenientUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			v, _ := url.PathUnescape(s[i : i+3])
			b.WriteString(v)
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// limitedID reports a decoded path that /l/{id} routes.
func limitedID(p string) bool {
	rest, ok := strings.CutPrefix(p, "/l/")
	return ok && rest != "" && !strings.Contains(rest, "/")
}

func FuzzProfiles(f *testing.F) {
	for _, seed := range []string{
		"/l/abc",                   // as routed
		"/l;x/abc", "/x/..;/l/abc", // path parameters
		"/l/.;/abc", "/;x/l/abc", // dot and leading parameters
		"/l%3Bx/abc",          // an encoded one
		"/l%252Fabc",          // double-encoded slash
		"/%256c/abc",          // double-encoded letter
		"/l/abc.json",         // a format
		"/index.php/l/abc",    // a front controller
		"/a.php/b.php/l/abc",  // two of them
		"/x/../index.php/l/x", // dots before it
		"/L/abc/",             // case and slash
		"/l%252Fabc%25",       // a % the hop leaves alone
		"/l/abc%3F/x",         // a ? the hop sends raw
	} {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(3))
	}
	tables := make(map[canon.Classes]*Table)
	for _, allow := range []canon.Classes{0, canon.Classes(canon.PathParameter | canon.EncodedPercent | canon.EncodedDelimiter)} {
		t, err := New([]string{"GET /l/{id}"}, Matching{Fold: true, Allow: allow})
		if err != nil {
			f.Fatal(err)
		}
		tables[allow] = t
	}
	f.Fuzz(func(t *testing.T, raw string, allowBits uint8) {
		allow := canon.Classes(0)
		if allowBits&1 != 0 {
			allow = canon.Classes(canon.PathParameter | canon.EncodedPercent | canon.EncodedDelimiter)
		}
		if !strings.HasPrefix(raw, "/") || strings.ContainsAny(raw, "?# \t\r\n") {
			return
		}
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			return
		}
		r := &http.Request{Method: "GET", URL: u, RequestURI: raw, Host: "example.com"}
		c, err := canon.Request(r, canon.Options{Allow: allow})
		if err != nil {
			return // refused: no framework sees it
		}
		if len(tables[allow].matchAll(c, nil, nil)) > 0 {
			return // limited
		}
		for name, read := range map[string]func(string) (string, bool){
			"servlet": servletPath, "rails": railsPath, "php": phpPath, "nginx $uri, then Flask": hopPath,
		} {
			if p, ok := read(raw); ok && limitedID(p) {
				t.Fatalf("%q (allowing %v) reaches /l/{id} as %q under %s, but admit forwards %q unlimited", raw, allow, p, name, c.RequestURI)
			}
		}
	})
}
