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
	// middleware reading X-HTTP-Method-Override and then, as its README
	// shows, the _method query parameter.
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
	// Rails is an ActionDispatch route set on puma behind
	// Rack::MethodOverride, as in every Rails app. Rails appends an
	// optional (.:format) to each route, so /l/abc.json is /l/:id with id
	// abc; it merges slashes and drops a trailing one before routing; and
	// Rack::MethodOverride routes a POST as the method its form body names
	// in _method, or its X-HTTP-Method-Override header.
	Rails Kind = "rails"
	// Sinatra is a Sinatra app on puma with its default settings and
	// method_override enabled, so Rack::MethodOverride as in Rails. Its
	// default Rack::Protection resolves dot segments (%2e, %2f and %5c
	// decoded first, a backslash taken for a slash) and merges slashes
	// before routing, so /u/../l/abc and /l%5Cabc are /l/abc.
	Sinatra Kind = "sinatra"
	// Tomcat is a servlet on Tomcat 10.1, one mapping per route (/l/*,
	// /u/*). Before it maps a path, Tomcat drops the ;parameters of every
	// segment, then decodes, resolves dot segments and merges slashes, so
	// /l;x/abc, /x/..;/l/abc, /l/.;/abc and /l/abc;jsessionid=1 are all
	// /l/abc; it refuses an encoded slash with 400. DELETE /l/<id> runs the
	// limited handler too.
	Tomcat Kind = "tomcat"
	// PHP is a front controller on PHP's built-in server: Symfony
	// HttpFoundation with the _method override enabled, and Symfony
	// Routing matching the path info, which HttpFoundation takes from
	// behind the script's name and Routing decodes, %2F included. So
	// /index.php/l/abc and /l%2Fabc are /l/abc, and a POST whose form
	// body or query names DELETE in _method, or whose
	// X-HTTP-Method-Override header does, is routed as DELETE, which runs
	// the limited handler too. PHP's server, like Werkzeug's, folds "_"
	// and "-" in header names into one.
	PHP Kind = "php"
	// NginxDecodeTomcat is nginx in front of the Tomcat app, passing / on
	// with a proxy_pass URI: nginx decodes the path before Tomcat reads its
	// ;parameters, so /l%3Bx/abc reaches Tomcat as /l;x/abc, which is
	// /l/abc. The counters live in the Tomcat app.
	NginxDecodeTomcat Kind = "nginx-uri-tomcat"
	// NginxDecodeFlask is nginx in front of the Flask app, passing on the
	// path it decoded and normalised ($uri) without encoding it again, so
	// that Werkzeug decodes it a second time: /%256c/abc reaches Flask as
	// /%6c/abc, which is /l/abc. A decoded CR LF ends the request line
	// nginx sends, and what follows it in the client's path reaches Flask
	// as headers. The counters live in the Flask app.
	NginxDecodeFlask Kind = "nginx-uri-flask"
	// WSGIRef is a plain WSGI app on the standard library's
	// wsgiref.simple_server, kept alive between requests, which answers
	// HEAD as GET, so that wsgiref sends the body; for HEAD /page/<any>
	// the body is an attacker's page that looks like an HTTP answer, sent
	// after the head once the next request comes on the connection (or
	// it closes). It is not among Kinds: its routing is the plain split
	// of a decoded path, of no interest to the spelling matrices, and it
	// serves tests of what a proxy reads from an upstream connection.
	WSGIRef Kind = "wsgiref"
	// Django is Django's function views, without a method decorator,
	// behind its default middleware, on wsgiref. Such a view runs for any
	// method CsrfViewMiddleware lets through (GET, HEAD, OPTIONS, TRACE),
	// and a @csrf_exempt one for every method. It serves the routes of
	// the package documentation but DELETE /l/<id>, and /w/<id>, the
	// limited handler too, @csrf_exempt; the hits count both. It is not
	// among Kinds yet: the tests over Kinds spell out each kind's own
	// readings, and Django's are not among them.
	Django Kind = "django"
	// TomcatValves is the Tomcat app with RemoteIpValve and SSLValve on
	// its Engine, as a servlet container behind a TLS-terminating proxy is
	// configured: from any loopback or private peer (RemoteIpValve's
	// default internalProxies) it believes X-Forwarded-For, -Proto, -Host
	// and -Port, and SSLValve's ssl_client_cert, ssl_cipher and
	// ssl_session_id, which set the request's certificate, cipher suite
	// and session id. [Seen.Facts] reports what it believed. It routes as
	// Tomcat does, so it is not among Kinds.
	TomcatValves Kind = "tomcat-valves"
	// Tornado is a Tornado app on Tornado's own server with xheaders=True,
	// as Tornado's documentation runs it behind a proxy: from any peer it
	// believes X-Real-Ip (or the last X-Forwarded-For element) as the
	// client's address and X-Scheme (or X-Forwarded-Proto) as the scheme,
	// which Seen's RemoteAddr and Scheme report. It serves the routes, but
	// it is not among Kinds.
	Tornado Kind = "tornado"
	// Jetty is an embedded Jetty 9.4 whose connector has a
	// ForwardedRequestCustomizer with its defaults, as Jetty's
	// http-forwarded module sets it up behind a proxy: from any peer it
	// believes X-Forwarded-* and Forwarded, X-Proxied-Https (the request
	// becomes secure), Proxy-ssl-id (the TLS session id) and
	// Proxy-auth-cert (the cipher suite). [Seen.Facts] reports what it
	// believed. It serves the routes, but it is not among Kinds.
	Jetty Kind = "jetty"
)

// factKinds are the kinds Start runs beside Kinds, for tests of what an app
// believes of the connection rather than how it routes.
var factKinds = []Kind{TomcatValves, Tornado, Jetty}

// Kinds returns every Kind, for tests that run against each of them.
func Kinds() []Kind {
	return []Kind{Flask, Express, PrefixMux, Gorilla, NginxGo, Rails, Sinatra,
		Tomcat, PHP, NginxDecodeTomcat, NginxDecodeFlask}
}

// outsideKinds are the kinds Start serves that are not among Kinds: apps
// for the tests of one reading each, which the spelling matrices leave out.
var outsideKinds = []Kind{WSGIRef, Django}

// controlTimeout bounds one request to a control endpoint.
const controlTimeout = 10 * time.Second

// Router is one running upstream app, as Start returns it; the zero Router
// is not usable. Its methods fail the test on error, so they must be called
// from the test's goroutine.
type Router struct {
	// URL is where tests send requests: http://127.0.0.1:port, with no
	// trailing slash. For the kinds with nginx in front it is nginx's
	// address.
	URL string
	// Kind is the kind of app running.
	Kind Kind

	control string // base URL of the control endpoints: URL, or behind nginx the app's own
	client  *http.Client
	procs   []*proc // for the log tails of failure messages
}

// Seen is one request as the app saw it. Its zero value, with a nil Header,
// means the app has routed no request since it started or was Reset.
type Seen struct {
	// Method is the method the app routed the request as: upper-cased by
	// Werkzeug, for Express the one method-override chose, for Rails and
	// Sinatra the one Rack::MethodOverride chose, and for PHP the one
	// Symfony's override chose.
	Method string
	// Path is the path as the framework exposes the routed path: decoded
	// (r.URL.Path in Go, request.path in Flask), or for Express req.path,
	// which Express leaves encoded. For Tomcat it is the servlet path and
	// path info, decoded and normalised; for PHP the path info Symfony
	// Routing matches, decoded. For Rails it is PATH_INFO as puma passes
	// it, undecoded; for Sinatra the same once Rack::Protection has
	// cleaned it.
	Path string
	// Raw is the request target as the app received it (RequestURI, or
	// Werkzeug's RAW_URI, or Express's req.originalUrl, or the servlet's
	// request URI and query, or PHP's or puma's REQUEST_URI). Behind nginx
	// it is what nginx sent on.
	Raw string
	// Header holds those of X-Forwarded-For, X-Forwarded-Host,
	// X-Forwarded-Proto, X-Real-Ip, X-HTTP-Method-Override and Forwarded
	// that the app saw, each as one value (repeats joined with commas, as
	// the app joins them). It is not nil when the app routed a request.
	Header http.Header
	// RemoteAddr, Scheme and Host are the client address, scheme and host
	// the app believes in. For Flask they are what ProxyFix computed from
	// the X-Forwarded headers, for Tornado what xheaders did; for the others the peer's address, "http",
	// and the Host header.
	RemoteAddr string
	Scheme     string
	Host       string
	// Facts are what the Java kinds believe of the connection: "secure"
	// (request.isSecure), "server_name", "server_port", and, when set, "client_cert" (the
	// subject of the request's certificate), "cipher_suite" and
	// "ssl_session_id". Nil for the other kinds.
	Facts map[string]string
}

// Start runs one upstream app of kind on a free loopback port, returns once
// it answers, and kills it when t ends. It fails t, saying what to install,
// when what the kind needs is missing.
func Start(t testing.TB, kind Kind) *Router {
	t.Helper()
	if !slices.Contains(Kinds(), kind) && !slices.Contains(SwitchingKinds(), kind) && !slices.Contains(outsideKinds, kind) && !slices.Contains(factKinds, kind) {
		t.Fatalf("testrouter: unknown kind %q; want one of %v, %v, %v or %v", kind, Kinds(), SwitchingKinds(), outsideKinds, factKinds)
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
	app := kind
	front, fronted := nginxFronts[kind]
	if fronted {
		app = front.app
	}
	if kind == NghttpxGo {
		app = NginxGo // the Go app, which nginx fronts too
	}
	p, port := serve(t, r.client, dir, string(app), appCommand(t, app), 0)
	r.procs = append(r.procs, p)
	r.control = baseURL(port)
	r.URL = r.control
	if fronted {
		nginx, port := serve(t, r.client, dir, "nginx", nginxCommand(t, kind, dir, port), p.cmd.Process.Pid)
		r.procs = append(r.procs, nginx)
		r.URL = baseURL(port)
	}
	if kind == NghttpxGo {
		nghttpx, port := serve(t, r.client, dir, "nghttpx", nghttpxCommand(t, dir, port), p.cmd.Process.Pid)
		r.procs = append(r.procs, nghttpx)
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
		Facts:      v.Facts,
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
