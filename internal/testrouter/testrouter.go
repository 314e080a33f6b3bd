package testrouter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testrouter/upstream"
)

// Kind names an upstream app: a web framework, or a proxy in front of one,
// serving the package's routes with its own router. Only the constants below
// are kinds; Start fails the test on any other.
type Kind string

const (
	// Flask is a Flask app on Werkzeug's development server, wrapped in
	// ProxyFix(x_for=1, x_proto=1, x_host=1). Werkzeug decodes the path
	// before routing and upper-cases the method; its server also folds "_"
	// into "-" in header names, so a forged X_Forwarded_For reaches ProxyFix
	// as X-Forwarded-For.
	Flask Kind = "flask"
	// Express is Express 4 with its default settings, case-insensitive
	// routing and a forgiven trailing slash, behind the method-override
	// middleware reading X-HTTP-Method-Override.
	Express Kind = "express"
	// PrefixMux is http.ServeMux with the pre-Go 1.22 semantics
	// (GODEBUG httpmuxgo121=1) and routes registered as path prefixes, the
	// old way. It matches on the decoded path, so /l%2Fabc is /l/abc.
	PrefixMux Kind = "prefixmux"
	// Gorilla is gorilla/mux with its default settings, which also match on
	// the decoded path.
	Gorilla Kind = "gorilla"
	// NginxGo is nginx in front of a Go 1.22 ServeMux app, passing /l/ and /
	// on with proxy_pass URIs, so that nginx sends the path it normalised:
	// decoded, dot segments resolved, slashes merged. The counters live in
	// the Go app.
	NginxGo Kind = "nginx-go"
)

// Kinds returns every Kind, for tests that run against each of them.
func Kinds() []Kind { return []Kind{Flask, Express, PrefixMux, Gorilla, NginxGo} }

// controlTimeout bounds one request to a control endpoint.
const controlTimeout = 10 * time.Second

// Router is one running upstream app, as Start returns it; the zero Router
// is not usable. Its methods fail the test on error, so they must be called
// from the test's goroutine.
type Router struct {
	// URL is where tests send requests: http://127.0.0.1:port, with no
	// trailing slash. For NginxGo it is nginx's address.
	URL string
	// Kind is the kind of app running.
	Kind Kind

	control string // base URL of the control endpoints: URL, or for NginxGo the Go app's own
	client  *http.Client
	procs   []*proc // for the log tails of failure messages
}

// Seen is one request as the app saw it. Its zero value, with a nil Header,
// means the app has routed no request since it started or was Reset.
type Seen struct {
	// Method is the method the app routed the request as: upper-cased by
	// Werkzeug, and for Express the one method-override chose.
	Method string
	// Path is the path as the framework exposes the routed path: decoded
	// (r.URL.Path in Go, request.path in Flask), or for Express req.path,
	// which Express leaves encoded.
	Path string
	// Raw is the request target as the app received it (RequestURI, or
	// Werkzeug's RAW_URI, or Express's req.originalUrl). For NginxGo it is
	// what nginx sent on.
	Raw string
	// Header holds those of X-Forwarded-For, X-Forwarded-Host,
	// X-Forwarded-Proto, X-Real-Ip, X-HTTP-Method-Override and Forwarded
	// that the app saw, each as one value (repeats joined with commas, as
	// the app joins them). It is not nil when the app routed a request.
	Header http.Header
	// RemoteAddr, Scheme and Host are the client address, scheme and host
	// the app believes in. For Flask they are what ProxyFix computed from
	// the X-Forwarded headers; for the others the peer's address, "http",
	// and the Host header.
	RemoteAddr string
	Scheme     string
	Host       string
}

// Start runs one upstream app of kind on a free loopback port, returns once
// it answers, and kills it when t ends. It fails t, saying what to install,
// when what the kind needs is missing.
func Start(t testing.TB, kind Kind) *Router {
	t.Helper()
	if !slices.Contains(Kinds(), kind) {
		t.Fatalf("testrouter: unknown kind %q; want one of %v", kind, Kinds())
	}
	r := &Router{
		Kind: kind,
		client: &http.Client{
			Timeout: controlTimeout,
			// A fresh connection per request, so that no request is sent on
			// a connection an app half-closed, and no proxy from the
			// environment stands in between.
			Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
		},
	}
	dir := t.TempDir()
	app := appCommand(t, kind)
	p, port := serve(t, r.client, dir, string(kind), app, 0)
	r.procs = append(r.procs, p)
	r.control = baseURL(port)
	r.URL = r.control
	if kind == NginxGo {
		front, port := serve(t, r.client, dir, "nginx", nginxCommand(t, dir, port), p.cmd.Process.Pid)
		r.procs = append(r.procs, front)
		r.URL = baseURL(port)
	}
	return r
}

// Hits returns how many times the app's limited handler ran since it started
// or was last Reset.
func (r *Router) Hits(t testing.TB) int {
	t.Helper()
	var v struct {
		Hits *int `json:"hits"`
	}
	r.call(t, http.MethodGet, upstream.HitsPath, &v)
	if v.Hits == nil {
		t.Fatalf("testrouter: %s %s: no hits in the answer\n%s", r.Kind, upstream.HitsPath, r.logTails())
	}
	return *v.Hits
}

// Reset sets the hit count to zero and forgets the last request.
func (r *Router) Reset(t testing.TB) {
	t.Helper()
	r.call(t, http.MethodPost, upstream.ResetPath, nil)
}

// Last returns the last request the app routed, to any handler or to none,
// since it started or was Reset; requests to the control endpoints do not
// count.
func (r *Router) Last(t testing.TB) Seen {
	t.Helper()
	var v upstream.Seen
	r.call(t, http.MethodGet, upstream.LastPath, &v)
	if v.Method == "" {
		return Seen{}
	}
	s := Seen{
		Method:     v.Method,
		Path:       v.Path,
		Raw:        v.Raw,
		Header:     http.Header{},
		RemoteAddr: v.RemoteAddr,
		Scheme:     v.Scheme,
		Host:       v.Host,
	}
	for name, value := range v.Headers {
		s.Header.Set(name, value)
	}
	return s
}

// call sends one request to a control endpoint and decodes its JSON answer
// into v, if v is not nil.
func (r *Router) call(t testing.TB, method, path string, v any) {
	t.Helper()
	fail := func(err error) {
		t.Helper()
		t.Fatalf("testrouter: %s %s %s: %v\n%s", r.Kind, method, path, err, r.logTails())
	}
	req, err := http.NewRequest(method, r.control+path, nil)
	if err != nil {
		fail(err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail(fmt.Errorf("status %s", resp.Status))
	}
	if v == nil {
		return
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		fail(fmt.Errorf("decode answer: %w", err))
	}
}

// logTails returns the end of each of the router's logs, for failure messages.
func (r *Router) logTails() string {
	var b strings.Builder
	for _, p := range r.procs {
		fmt.Fprintf(&b, "--- %s log:\n%s\n", p.name, p.logTail())
	}
	return b.String()
}
