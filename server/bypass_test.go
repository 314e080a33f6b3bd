package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/admitgo/admit/internal/testrouter"
	"github.com/admitgo/admit/server/routes"
)

// bypassSpelling is a spelling of a request to the limited route, GET (or
// DELETE) /l/{id}, mostly of /l/abc, that some router in front of or behind
// a proxy routes to the same handler: each is in the matrix because a real router does so
// (see internal/testrouter's quirk tests).
type bypassSpelling struct {
	name, request string // the request line and any headers, without the final CRLF
	body          string // sent after the head; the request gives its length
}

// form is a POST of /l/abc with a body of type contentType.
func form(name, contentType, body string) bypassSpelling {
	return bypassSpelling{name: name, body: body,
		request: fmt.Sprintf("POST /l/abc HTTP/1.1\r\nContent-Type: %s\r\nContent-Length: %d", contentType, len(body))}
}

const (
	urlencoded      = "application/x-www-form-urlencoded"
	multipartMethod = "--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--b--\r\n"
)

var bypassSpellings = []bypassSpelling{
	{name: "as routed", request: "GET /l/abc HTTP/1.1"},
	{name: "HEAD", request: "HEAD /l/abc HTTP/1.1"},
	{name: "query", request: "GET /l/abc?x=1 HTTP/1.1"},
	{name: "encoded slash", request: "GET /l%2Fabc HTTP/1.1"},
	{name: "encoded slash, lower-case", request: "GET /l%2fabc HTTP/1.1"},
	{name: "trailing encoded slash", request: "GET /l/abc%2F HTTP/1.1"},
	{name: "encoded backslash", request: "GET /l%5Cabc HTTP/1.1"},
	{name: "backslash", request: "GET /l\\abc HTTP/1.1"},
	{name: "upper case", request: "GET /L/abc HTTP/1.1"},
	{name: "trailing slash", request: "GET /l/abc/ HTTP/1.1"},
	{name: "upper case, trailing slash", request: "GET /L/ABC/ HTTP/1.1"},
	{name: "upper-case id", request: "GET /l/ABC HTTP/1.1"},
	{name: "upper case, upper-case id", request: "GET /L/ABC HTTP/1.1"},
	{name: "lower-case method", request: "get /l/abc HTTP/1.1"},
	{name: "mixed-case method", request: "Get /l/abc HTTP/1.1"},
	{name: "method override", request: "POST /l/abc HTTP/1.1\r\nX-HTTP-Method-Override: GET\r\nContent-Length: 0"},
	{name: "method override, underscores", request: "POST /l/abc HTTP/1.1\r\nX_HTTP_Method_Override: GET\r\nContent-Length: 0"},
	{name: "encoded dot segments", request: "GET /l/%2e%2e/l/abc HTTP/1.1"},
	{name: "dot segments", request: "GET /u/../l/abc HTTP/1.1"},
	{name: "dot segment", request: "GET /l/./abc HTTP/1.1"},
	{name: "doubled slashes", request: "GET //l//abc HTTP/1.1"},
	{name: "escaped letter", request: "GET /%6c/abc HTTP/1.1"},
	{name: "absolute form", request: "GET http://127.0.0.1/l/abc HTTP/1.1"},
	// Servlet containers strip path parameters from every segment.
	{name: "path parameter", request: "GET /l;x/abc HTTP/1.1"},
	{name: "leading path parameter", request: "GET /;x/l/abc HTTP/1.1"},
	{name: "dot-dot parameter", request: "GET /x/..;/l/abc HTTP/1.1"},
	{name: "dot parameter", request: "GET /l/.;/abc HTTP/1.1"},
	{name: "session parameter", request: "GET /l/abc;jsessionid=1 HTTP/1.1"},
	{name: "encoded semicolon", request: "GET /l%3Bx/abc HTTP/1.1"},
	// A decoding hop passes %252F on as %2F, which the app decodes.
	{name: "double-encoded slash", request: "GET /l%252Fabc HTTP/1.1"},
	{name: "double-encoded letter", request: "GET /%256c/abc HTTP/1.1"},
	// Rails routes an optional format suffix.
	{name: "format", request: "GET /l/abc.json HTTP/1.1"},
	{name: "format, upper case", request: "GET /l/abc.JSON HTTP/1.1"},
	{name: "format, any word", request: "GET /l/abc.x HTTP/1.1"},
	// PHP front controllers serve the path after index.php.
	{name: "front controller", request: "GET /index.php/l/abc HTTP/1.1"},
	{name: "front controller, dots", request: "GET /x/../index.php/l/abc HTTP/1.1"},
	// Rack, Express, Symfony and Spring run a POST as its _method.
	{name: "_method in the query", request: "POST /l/abc?_method=DELETE HTTP/1.1\r\nContent-Length: 0"},
	{name: "_method in a form", request: "POST /l/abc HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 14", body: "_method=DELETE"},
	{name: "_method, form untyped", request: "POST /l/abc HTTP/1.1\r\nContent-Length: 14", body: "_method=delete"},
	{name: "_method, multipart", request: "POST /l/abc HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 64",
		body: "--b\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--b--\r\n"},
	// Frameworks respell the parameter's name and read media types
	// loosely: Rack strips brackets, PHP turns '.' and ' ' into '_' and
	// stops at NUL, and each parses multipart its own way.
	form("_method in brackets", urlencoded, "[_method]=DELETE"),
	form("_method, one bracket", urlencoded, "_method]=DELETE"),
	form(".method", urlencoded, ".method=DELETE"),
	form("+_method", urlencoded, "+_method=DELETE"),
	form("_method[]", urlencoded, "_method[]=DELETE"),
	form("_method, NUL in the name", urlencoded, "_method%00x=DELETE"),
	form("_method, spaces first", urlencoded, "%20%20_method=DELETE"),
	form("form type, a list", urlencoded+", text/plain", "_method=DELETE"),
	form("form type, a word after", urlencoded+" x", "_method=DELETE"),
	form("form type, empty parameters", urlencoded+";;", "_method=DELETE"),
	form("form type, EBCDIC", urlencoded+"; charset=ibm037", "\x6d\x94\x85\xa3\x88\x96\x84=\xc4\xc5\xd3\xc5\xe3\xc5"),
	form("multipart/mixed", "multipart/mixed; boundary=b", multipartMethod),
	form("multipart, a stray parameter", "multipart/form-data; boundary=b; foo", multipartMethod),
	form("multipart, attachment", "multipart/form-data; boundary=b", strings.Replace(multipartMethod, "form-data;", "attachment;", 1)),
	form("multipart, two names", "multipart/form-data; boundary=b", strings.Replace(multipartMethod, `name="_method"`, `name="x"; name="_method"`, 1)),
	form("multipart, two boundaries", "multipart/form-data; xboundary=c; boundary=b; yboundary=c",
		"--c\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nDELETE\r\n--c--\r\n--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--\r\n"),
	form("JSON", "application/json", `{"_method":"DELETE"}`),
	{name: "_method escaped in the query", request: "POST /l/abc?_%6Dethod=DELETE HTTP/1.1\r\nContent-Length: 0"},
	{name: ".method in the query", request: "POST /l/abc?.method=DELETE HTTP/1.1\r\nContent-Length: 0"},
	{name: "two content types", request: "POST /l/abc HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 14", body: "_method=DELETE"},
	{name: "chunked form", request: "POST /l/abc HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked", body: "e\r\n_method=DELETE\r\n0\r\n\r\n"},
	// A decoding hop sends %3F, %23 and spaces on raw, and %25 as '%'.
	{name: "encoded ?", request: "GET /l/abc%3F/zzz HTTP/1.1"},
	{name: "encoded #", request: "GET /l/abc%23/zzz HTTP/1.1"},
	{name: "encoded space", request: "GET /l/abc%20/zzz HTTP/1.1"},
	{name: "encoded tab", request: "GET /l/abc%09/zzz HTTP/1.1"},
	{name: "double-encoded, a % last", request: "GET /l%252Fabc%25 HTTP/1.1"},
	{name: "double-encoded, a bad escape", request: "GET /l%252Fabc%25zz HTTP/1.1"},
	{name: "double-encoded NUL", request: "GET /l%252Fabc%2500 HTTP/1.1"},
	// Werkzeug resolves no dot segment its own decoding makes: behind a
	// decoding hop these are /l/. and /l/.., ids of "." and "..".
	{name: "double-encoded slash, a dot", request: "GET /l%252F. HTTP/1.1"},
	{name: "double-encoded slash, two dots", request: "GET /l%252F.. HTTP/1.1"},
	// Frameworks disagree on which part of a listed Host they read.
	{name: "comma in Host", request: "GET /l/abc HTTP/1.1\r\nHost: x,127.0.0.1"},
	// A decoding hop sends CR LF as it is, splitting the request.
	{name: "encoded CR LF", request: "GET /l/abc%0D%0AX-Forwarded-For:%20203.0.113.9%0D%0AX: HTTP/1.1"},
}

// bypassSettings are the ways the matrix runs admit: strict as it starts,
// with the switchable classes let through under the generic profile, and
// with them let through under the profile that names the upstream's
// framework. Each claims to cover every spelling.
var bypassSettings = []struct {
	name  string
	flags func(testrouter.Kind) []string
}{
	{"strict", func(testrouter.Kind) []string { return nil }},
	{"generic, allowing", func(testrouter.Kind) []string {
		return []string{"--allow-spellings", "path_parameter,encoded_percent,encoded_delimiter"}
	}},
	{"its profile, allowing", func(k testrouter.Kind) []string {
		return []string{"--allow-spellings", "path_parameter,encoded_percent,encoded_delimiter", "--upstream-profile", kindProfile(k).String()}
	}},
}

// kindProfile names the profile of the framework each kind runs.
func kindProfile(k testrouter.Kind) routes.Profile {
	switch k {
	case testrouter.Tomcat, testrouter.NginxDecodeTomcat:
		return routes.Servlet
	case testrouter.Rails:
		return routes.Rails
	case testrouter.Sinatra:
		return routes.Rack
	case testrouter.PHP:
		return routes.PHP
	case testrouter.Express:
		return routes.Express
	}
	return routes.Generic
}

// TestBypassMatrix puts admit in front of real routers that route
// differently from Go's 1.22 ServeMux, and sends each spelling of a limited
// request more times than the burst, each spelling from its own address:
// whatever the router makes of a spelling, its limited handlers run at
// most the burst, under every setting. The tables it logs (go test -v) are
// the matrix of router and spelling per setting: what admit answered and
// how often the limited handlers ran.
func TestBypassMatrix(t *testing.T) {
	const burst, sent = 3, 6
	cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: link, pattern: "GET /l/{id}"}
  - {group: link, pattern: "DELETE /l/{id}"}
budgets:
  link: {rate: 0.001, burst: %d, per_client: 100, inflight: 100}
`, burst))
	kinds := testrouter.Kinds()
	rows := make([][][]string, len(bypassSettings)) // setting, spelling, kind; a cell a failed run did not reach stays blank
	for s := range bypassSettings {
		rows[s] = make([][]string, len(bypassSpellings))
		for i := range rows[s] {
			rows[s][i] = make([]string, len(kinds))
		}
	}
	for k, kind := range kinds {
		up := testrouter.Start(t, kind)
		for s, setting := range bypassSettings {
			t.Run(fmt.Sprintf("%s/%s", kind, setting.name), func(t *testing.T) {
				args := append([]string{"--upstream", up.URL, "--config", cfg, "--trusted-proxy", "127.0.0.1"}, setting.flags(kind)...)
				r := start(t, args...)
				addr := strings.TrimPrefix(r.url, "http://")
				for i, sp := range bypassSpellings {
					up.Reset(t)
					answers := map[int]int{}
					head := sp.request
					if !strings.Contains(head, "\r\nHost: ") {
						head += "\r\nHost: 127.0.0.1"
					}
					for range sent {
						a := rawFrom(t, fmt.Sprintf("127.0.%d.%d", 10+i/200, 1+i%200), addr, head+"\r\nConnection: close\r\n\r\n"+sp.body)
						answers[a.status]++
					}
					hits := up.Hits(t)
					if hits > burst {
						t.Errorf("%s, %s, %s: the limited handlers ran %d times for %d requests, want at most the burst, %d (admit answered %v)",
							kind, setting.name, sp.name, hits, sent, burst, answers)
					}
					if i == 0 && hits != burst {
						t.Errorf("%s, %s, as routed: the limited handler ran %d times, want exactly the burst, %d", kind, setting.name, hits, burst)
					}
					rows[s][i][k] = fmt.Sprintf("%s, %d hits", summarise(answers), hits)
				}
				// Matching limits only what it should: unrouted paths pass
				// unlimited and unchanged.
				up.Reset(t)
				r.answers(t, 3*burst, http.StatusOK, "GET", "/u/a/b", "")
				if seen := up.Last(t); seen.Path != "/u/a/b" {
					t.Errorf("%s, %s: the unlimited handler saw %q, want /u/a/b unchanged", kind, setting.name, seen.Path)
				}
				if hits := up.Hits(t); hits != 0 {
					t.Errorf("%s, %s: unrouted requests ran the limited handler %d times", kind, setting.name, hits)
				}
				if err := r.stop(); err != nil {
					t.Errorf("%s, %s: serve: %v", kind, setting.name, err)
				}
			})
		}
	}
	for s, setting := range bypassSettings {
		var table strings.Builder
		fmt.Fprintf(&table, "%-33s", "spelling")
		for _, kind := range kinds {
			fmt.Fprintf(&table, " %-19s", kind)
		}
		for i, sp := range bypassSpellings {
			fmt.Fprintf(&table, "\n%-33s", sp.name)
			for _, cell := range rows[s][i] {
				fmt.Fprintf(&table, " %-19s", cell)
			}
		}
		t.Logf("%s: router x spelling (admit's answers, then the limited handlers' runs; %d requests each, burst %d):\n%s", setting.name, sent, burst, table.String())
	}
}

// summarise writes admit's answers to one spelling compactly: "3x200 3x429".
func summarise(answers map[int]int) string {
	var parts []string
	for _, code := range []int{200, 404, 405, 301, 308, 400, 429} {
		if n := answers[code]; n > 0 {
			parts = append(parts, fmt.Sprintf("%dx%d", n, code))
		}
		delete(answers, code)
	}
	for code, n := range answers {
		parts = append(parts, fmt.Sprintf("%dx%d", n, code))
	}
	return strings.Join(parts, " ")
}

// TestPathKeyMatrix keys the limited route by its id and sends every
// spelling of /l/abc once, each from its own address, to every router under
// the generic profile and under its own: no id the framework reads from
// the spellings runs the limited handlers more often than one budget
// allows, so a respelled id never buys a second budget.
func TestPathKeyMatrix(t *testing.T) {
	const burst = 3
	cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: item, pattern: "GET /l/{id}"}
  - {group: item, pattern: "DELETE /l/{id}"}
budgets:
  item: {like: link, rate: 0.001, burst: %d, key: "path:id", key_authenticated: true, per_client: 100, inflight: 100}
`, burst))
	for _, kind := range testrouter.Kinds() {
		up := testrouter.Start(t, kind)
		for _, p := range []routes.Profile{routes.Generic, kindProfile(kind)} {
			r := start(t, "--upstream", up.URL, "--config", cfg, "--allow-spellings", "path_parameter,encoded_percent",
				"--upstream-profile", p.String())
			addr := strings.TrimPrefix(r.url, "http://")
			ids := map[string]int{} // id the app's handler read -> its runs
			for i, sp := range bypassSpellings {
				if strings.HasPrefix(sp.request, "HEAD ") {
					continue // no body tells which id ran
				}
				head := sp.request
				if !strings.Contains(head, "\r\nHost: ") {
					head += "\r\nHost: 127.0.0.1"
				}
				a := rawFrom(t, fmt.Sprintf("127.2.%d.%d", i/200, 1+i%200), addr, head+"\r\nConnection: close\r\n\r\n"+sp.body)
				if id, ok := strings.CutPrefix(a.body, "limited "); ok && a.status == http.StatusOK {
					ids[strings.TrimSuffix(id, "\n")]++
				}
			}
			for id, n := range ids {
				if n > burst {
					t.Errorf("%s under %v: the limited handlers ran %d times for id %q, want at most its burst, %d (ids the app read: %v)",
						kind, p, n, id, burst, ids)
				}
			}
			t.Logf("%s under %v: ids the app read, and how often: %v", kind, p, ids)
			if err := r.stop(); err != nil {
				t.Errorf("%s under %v: serve: %v", kind, p, err)
			}
		}
	}
}
