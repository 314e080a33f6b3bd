package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The request headers admit manages. factTable is the one list: the proxy
// strips by it on both of its paths, admit explain and the metric
// admit.server.stripped_headers name its families, and docs/operators.md
// ("Proxy facts") prints it.
//
// Proxies tell apps what they know about the connection and the routing in
// request headers: the client's address, the scheme, the TLS session, the
// client certificate and its verification, the host and port, the prefix the
// app is mounted at, the URL or method before a rewrite. A server or
// framework that trusts the peer (often any loopback or private peer, which
// admit is) takes such a header as the fact itself. admit is the edge, so a
// client's claim must never arrive as one: every header that matches a row,
// in any case and with '_' read as '-' (CGI and WSGI servers merge
// X_Forwarded_For with X-Forwarded-For; Tomcat's SSLValve reads
// ssl_client_cert), is removed, then admit sets its own X-Forwarded-For,
// -Host and -Proto. A row is a family of names, not a list of bad ones: a
// prefix row covers the names proxies have not invented yet.

// family is the kind of fact a header claims. Its names are the values of
// the metric's attribute, so the set is fixed.
type family uint8

const (
	famAddress        family = iota // the client's address or port
	famScheme                       // that the client spoke TLS
	famTLS                          // the TLS session: cipher, session id, key size
	famClientCert                   // the client certificate and its verification
	famHost                         // the host and port the client asked for
	famPrefix                       // the path prefix the app is mounted at
	famOriginal                     // the request's URL, path or method before a rewrite
	famForwarded                    // a proxy's claim in a forwarding convention, named or not yet
	famEnvoy                        // Envoy's internal facts
	famOutboundProxy                // the proxy the app itself sends through (httpoxy)
	famMethodOverride               // another method to run the request as
	famUpgrade                      // the parameters of an upgrade admit never forwards
	numFamilies
)

var familyNames = [numFamilies]string{"address", "scheme", "tls", "client_cert", "host", "prefix",
	"original_request", "forwarded", "envoy", "outbound_proxy", "method_override", "upgrade"}

func (f family) String() string { return familyNames[f] }

// factRow is one row of factTable. A pattern ending in '*' is a prefix;
// otherwise it is a name. Both are compared case-insensitively, with '_'
// read as '-'.
type factRow struct {
	family  family
	pattern string
	readers string // who reads it as a fact
}

// factTable: a name matches its exact row first, then the longest prefix.
// X-Forwarded-For, X-Forwarded-Host and X-Forwarded-Proto are admit's own
// answers: it replaces a client's with them on every request.
var factTable = []factRow{
	{famAddress, "X-Forwarded-For", "nearly every server and framework (Tomcat's RemoteIpValve, Jetty, Werkzeug's ProxyFix, Rack, Express, ASP.NET Core, uvicorn, Tornado)"},
	{famAddress, "X-Real-Ip", "Tornado (xheaders), nginx's realip module, chi's RealIP, Gin, Echo, gorilla/handlers"},
	{famAddress, "True-Client-Ip", "Akamai and Cloudflare setups, chi's RealIP"},
	{famAddress, "Cf-Connecting-Ip", "Cloudflare setups, Gin's TrustedPlatform"},
	{famAddress, "Cf-Connecting-Ipv6", "Cloudflare setups"},
	{famAddress, "Cf-Pseudo-Ipv4", "Cloudflare setups"},
	{famAddress, "X-Client-Ip", "Apache's mod_remoteip setups, Azure App Service, Node's request-ip"},
	{famAddress, "Client-Ip", "Rails' RemoteIp (HTTP_CLIENT_IP), Node's request-ip"},
	{famAddress, "X-Cluster-Client-Ip", "Rackspace and Riverbed balancers, Node's request-ip"},
	{famAddress, "Fastly-Client-Ip", "Fastly setups, Node's request-ip"},
	{famAddress, "Fly-Client-Ip", "Fly.io setups, Gin's TrustedPlatform"},
	{famAddress, "X-Appengine-Remote-Addr", "Gin's TrustedPlatform for App Engine"},
	{famAddress, "X-Azure-Clientip", "Azure Front Door setups"},
	{famAddress, "X-Azure-Socketip", "Azure Front Door setups"},
	{famAddress, "Cloudfront-Viewer-Address", "CloudFront setups"},
	{famAddress, "X-Original-Forwarded-For", "ingress-nginx"},
	{famAddress, "X-Forwarded", "Node's request-ip"},
	{famAddress, "Forwarded-For", "Node's request-ip"},
	{famAddress, "Wl-Proxy-Client-Ip", "WebLogic's proxy plug-in"},
	{famAddress, "Proxy-Client-Ip", "WebLogic's proxy plug-in"},

	{famScheme, "X-Forwarded-Proto", "nearly every server and framework (Tomcat's RemoteIpValve, Jetty, gunicorn, uvicorn, Tornado, Django's SECURE_PROXY_SSL_HEADER, Rack, Express)"},
	{famScheme, "X-Forwarded-Protocol", "gunicorn (secure_scheme_headers), Echo"},
	{famScheme, "X-Forwarded-Scheme", "Rack, gorilla/handlers"},
	{famScheme, "X-Forwarded-Ssl", "gunicorn (secure_scheme_headers), Rack, Echo, Spring"},
	{famScheme, "X-Url-Scheme", "Echo"},
	{famScheme, "X-Scheme", "Tornado (xheaders), nginx setups for Flask"},
	{famScheme, "X-Proxied-Https", "Jetty's ForwardedRequestCustomizer: the request becomes secure"},
	{famScheme, "Front-End-Https", "Microsoft ISA and Outlook Web Access setups, PHP apps"},
	{famScheme, "X-Arr-Ssl", "IIS Application Request Routing, Azure App Service"},
	{famScheme, "Fastly-Ssl", "Fastly setups"},
	{famScheme, "Cf-Visitor", "Cloudflare setups ({\"scheme\":\"https\"})"},
	{famScheme, "Cloudfront-Forwarded-Proto", "CloudFront setups"},
	{famScheme, "Wl-Proxy-Ssl", "WebLogic's proxy plug-in: the request becomes secure"},

	{famTLS, "Ssl-*", "Tomcat's SSLValve (ssl_cipher, ssl_session_id, ssl_cipher_usekeysize), Undertow's SSLHeaderHandler, Apache mod_headers setups (SSL_*)"},
	{famTLS, "X-Ssl-*", "nginx and HAProxy setups"},
	{famTLS, "X-Ssl", "HAProxy setups (X-SSL: %[ssl_fc])"},
	{famTLS, "Proxy-Ssl-Id", "Jetty's ForwardedRequestCustomizer: the TLS session id"},
	{famTLS, "X-Amzn-Tls-*", "AWS Application Load Balancer"},
	{famTLS, "Cloudfront-Viewer-Tls", "CloudFront setups"},

	{famClientCert, "X-Forwarded-Client-Cert", "Envoy and Istio (XFCC), Spring Security setups"},
	{famClientCert, "X-Forwarded-Tls-Client-Cert*", "Traefik's PassTLSClientCert"},
	{famClientCert, "X-Client-Cert*", "ASP.NET Core's certificate forwarding, Google Cloud load balancers' mTLS headers"},
	{famClientCert, "Client-Cert*", "RFC 9440 (Client-Cert, Client-Cert-Chain)"},
	{famClientCert, "Ssl-Client-*", "Tomcat's SSLValve (ssl_client_cert), Undertow, ingress-nginx (ssl-client-verify, ssl-client-subject-dn)"},
	{famClientCert, "X-Ssl-Client-*", "nginx and HAProxy setups (X-SSL-Client-Cert, -Verify, -DN)"},
	{famClientCert, "X-Ssl-Cert", "nginx and HAProxy setups"},
	{famClientCert, "X-Client-Verify", "nginx setups"},
	{famClientCert, "X-Client-Dn", "nginx setups"},
	{famClientCert, "X-Arr-Clientcert", "IIS Application Request Routing, Azure App Service, ASP.NET Core"},
	{famClientCert, "X-Amzn-Mtls-*", "AWS Application Load Balancer (X-Amzn-Mtls-Clientcert and its -Subject, -Issuer, -Serial-Number)"},
	{famClientCert, "Proxy-Auth-Cert", "Jetty's ForwardedRequestCustomizer (taken as the cipher suite)"},
	{famClientCert, "Wl-Proxy-Client-*", "WebLogic's proxy plug-in (Wl-Proxy-Client-Cert, -Keysize)"},

	{famHost, "X-Forwarded-Host", "Werkzeug's ProxyFix, Django (USE_X_FORWARDED_HOST), Express, Jetty, Tomcat's RemoteIpValve, ASP.NET Core"},
	{famHost, "X-Forwarded-Port", "Werkzeug's ProxyFix, Tomcat's RemoteIpValve, Jetty, Rack, Spring, Django (USE_X_FORWARDED_PORT), Laravel and Symfony"},
	{famHost, "X-Forwarded-Server", "Jetty, Apache mod_proxy setups"},
	{famHost, "X-Original-Host", "ASP.NET Core's forwarded headers, and frameworks that take it as the host"},
	{famHost, "Disguised-Host", "Azure App Service"},

	{famPrefix, "X-Forwarded-Prefix", "Spring, Werkzeug's ProxyFix, ASP.NET Core, Laravel and Symfony"},
	{famPrefix, "X-Script-Name", "the ReverseProxied recipe for Flask and other WSGI apps"},
	{famPrefix, "Script-Name", "gunicorn (a SCRIPT_NAME header sets the WSGI SCRIPT_NAME)"},

	{famOriginal, "X-Original-Url", "IIS URL Rewrite, Symfony before 3.4.14, Zend Framework"},
	{famOriginal, "X-Rewrite-Url", "Symfony before 3.4.14, Zend Framework"},
	{famOriginal, "X-Original-Uri", "nginx auth_request setups"},
	{famOriginal, "X-Original-Method", "nginx auth_request setups"},
	{famOriginal, "X-Forwarded-Uri", "forward-auth servers behind Traefik"},
	{famOriginal, "X-Forwarded-Method", "forward-auth servers behind Traefik"},
	{famOriginal, "X-Envoy-Original-Path", "Envoy"},
	{famOriginal, "X-Waws-Unencoded-Url", "Azure App Service"},
	{famOriginal, "X-Middleware-Subrequest", "Next.js (a subrequest skips its middleware)"},

	{famForwarded, "Forwarded", "RFC 7239: Jetty, Rack, Spring, Symfony, Hypercorn, gorilla/handlers; removed, and carried by X-Forwarded-For instead"},
	{famForwarded, "X-Forwarded-*", "the convention every row above extends (X-Forwarded-User, -Email, -Path)"},
	{famForwarded, "X-Original-*", "ASP.NET Core's forwarded headers (X-Original-For, -Proto, -Prefix), ingress-nginx"},
	{famForwarded, "Proxy-*", "Jetty, WebLogic (Proxy-Authorization and Proxy-Connection are hop-by-hop and never forwarded)"},
	{famForwarded, "Fly-Forwarded-*", "Fly.io setups"},

	{famEnvoy, "X-Envoy-*", "Envoy, which trusts x-envoy-internal and x-envoy-external-address and strips the family from untrusted clients"},

	{famOutboundProxy, "Proxy", "CGI's HTTP_PROXY, which PHP's Guzzle, Python's requests and others take as their outbound proxy (httpoxy)"},

	{famMethodOverride, "X-Http-Method-Override", "Express's method-override, Rack::MethodOverride, Laravel and Symfony; forwarded with --method-override"},
	{famMethodOverride, "X-Http-Method", "Express's method-override, Symfony; forwarded with --method-override"},
	{famMethodOverride, "X-Method-Override", "Express's method-override; forwarded with --method-override"},
	// HTTP2-Settings is the first SETTINGS of the HTTP/2 connection an h2c
	// upgrade asks for (RFC 7540 section 3.2.1), and no --upgrade may name
	// h2c: it goes wherever it stands, named in Connection or not. Upgrade
	// and Connection themselves are hop-by-hop, written afresh for an
	// allowed protocol (upgrade.go).
	{famUpgrade, "Http2-Settings", "HTTP/2 servers that switch on Upgrade: h2c (hypercorn, nghttpx, Apache's mod_http2); admit never forwards h2c"},
}

// methodOverrideHeaders make frameworks run a request as another method
// than the one admit routed; admit removes them unless --method-override is
// set, and then matches the methods they name.
var methodOverrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// writtenHeaders are the forwarding headers admit writes in place of a
// client's; Forwarded is removed with them (httputil.ReverseProxy's Rewrite
// removes the four too).
var writtenHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"}

// checkPassHeaders refuses a --pass-header name that would not do what it
// says: one no row matches (it reaches the upstream already), one admit
// writes itself, or a method override (--method-override forwards those,
// and limits the methods they name).
func checkPassHeaders(names []string) error {
	for _, name := range names {
		row := facts.classify(name)
		switch {
		case strings.IndexByte(name, '*') >= 0:
			return fmt.Errorf("admit: --pass-header %q: a header's name, not a pattern: name each header to pass", name)
		case row == nil:
			return fmt.Errorf("admit: --pass-header %q: not a proxy fact admit strips, so it reaches the upstream already", name)
		case slices.Contains(writtenHeaders, row.pattern):
			// By the row, not the spelling: X_Forwarded_For is
			// X-Forwarded-For to CGI and WSGI servers.
			return fmt.Errorf("admit: --pass-header %q: admit writes its own, from what a trusted proxy sent where it can (see What the upstream receives)", name)
		case row.family == famMethodOverride:
			return fmt.Errorf("admit: --pass-header %q: a method override: --method-override forwards them and limits the methods they name", name)
		case row.family == famUpgrade:
			return fmt.Errorf("admit: --pass-header %q: the parameters of an h2c upgrade, which admit never forwards", name)
		}
	}
	return nil
}

// factIndex is factTable ready for the proxy's per-header check, which the
// direct path runs for every header of every request: an exact-name map
// and the prefixes by first byte, longest first, all folded (lower case,
// '_' as '-'), and the pairs of bytes any pattern starts with, so that most
// headers (Accept, Cookie, Sec-Fetch-Mode, User-Agent) are passed over
// after one look.
type factIndex struct {
	exact    map[string]*factRow
	prefixes [256][]factPrefix // by first byte, longest first, so the most specific row wins
	starts   [1 << 16 / 64]uint64
}

type factPrefix struct {
	folded string
	row    *factRow
}

var facts = newFactIndex(factTable)

func newFactIndex(rows []factRow) *factIndex {
	x := &factIndex{exact: make(map[string]*factRow)}
	for i := range rows {
		row := &rows[i]
		folded := foldName(strings.TrimSuffix(row.pattern, "*"))
		pair := startPair(folded[0], folded[1])
		x.starts[pair/64] |= 1 << (pair % 64)
		if strings.HasSuffix(row.pattern, "*") {
			x.prefixes[folded[0]] = append(x.prefixes[folded[0]], factPrefix{folded, row})
		} else {
			x.exact[folded] = row
		}
	}
	for _, ps := range x.prefixes {
		slices.SortStableFunc(ps, func(a, b factPrefix) int { return len(b.folded) - len(a.folded) })
	}
	return x
}

// startPair numbers the first two bytes of a folded name.
func startPair(b0, b1 byte) uint { return uint(b0)<<8 | uint(b1) }

// foldedMax is the longest name folded on the stack; a longer one costs an
// allocation.
const foldedMax = 128

// classify returns the row of factTable that header name matches, or nil.
// It does not allocate for names up to foldedMax bytes.
func (x *factIndex) classify(name string) *factRow {
	if len(name) < 2 {
		return nil // every pattern is longer
	}
	if pair := startPair(foldByte(name[0]), foldByte(name[1])); x.starts[pair/64]&(1<<(pair%64)) == 0 {
		return nil
	}
	var buf [foldedMax]byte
	var b []byte
	if len(name) <= len(buf) {
		b = buf[:len(name)]
	} else {
		b = make([]byte, len(name))
	}
	for i := 0; i < len(name); i++ {
		b[i] = foldByte(name[i])
	}
	if row, ok := x.exact[string(b)]; ok {
		return row
	}
	for _, p := range x.prefixes[b[0]] {
		if len(b) >= len(p.folded) && string(b[:len(p.folded)]) == p.folded {
			return p.row
		}
	}
	return nil
}

// foldByte reads c as CGI and WSGI servers and case-insensitive lookups do:
// lower case, '_' as '-'.
func foldByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_':
		return '-'
	}
	return c
}

func foldName(name string) string {
	b := []byte(name)
	for i, c := range b {
		b[i] = foldByte(c)
	}
	return string(b)
}

// hyphenated returns name as CGI and WSGI servers read it: underscores as
// hyphens, in canonical case.
func hyphenated(name string) string {
	return http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-"))
}

// spellings finds the other spellings of a set of headers: the names that
// CGI and WSGI servers read as one of them (X_Api_Key, x_api-key beside
// X-Api-Key). It maps each header's hyphenated name to the header's own
// canonical name.
type spellings map[string]string

func newSpellings(names []string) spellings {
	s := make(spellings, len(names))
	for _, name := range names {
		s[hyphenated(name)] = http.CanonicalHeaderKey(name)
	}
	return s
}

// strip returns a copy of h without the other spellings of the set's
// headers, or nil when h holds none, so that the common request costs no
// copy.
func (s spellings) strip(h http.Header) http.Header {
	if len(s) == 0 {
		return nil
	}
	var out http.Header
	for name := range h {
		folded := name
		if strings.IndexByte(name, '_') >= 0 {
			folded = hyphenated(name)
		}
		if own, ok := s[folded]; ok && own != name {
			if out == nil {
				out = h.Clone()
			}
			delete(out, name)
		}
	}
	return out
}

// dropConnectionNamed returns h without the headers its Connection field
// names, or nil when it names none that h holds. Such a header is
// hop-by-hop (RFC 9110, section 7.6.1): neither forwarding path sends it
// on, so the door must not key or match by it either, or a client would
// pick a fresh key on every request that the app never sees. Connection
// and Upgrade stay for the upgrade rule, which reads them, and the proxy
// facts of factTable, which admit strips or replaces itself: the client's
// address is read from a trusted proxy's X-Forwarded-For or Forwarded,
// which a client must not take away by naming it.
func dropConnectionNamed(h http.Header) http.Header {
	conn := h["Connection"]
	if len(conn) == 0 {
		return nil
	}
	var out http.Header
	for name := range h {
		if !httpguts.HeaderValuesContainsToken(conn, name) || name == "Connection" || name == "Upgrade" || facts.classify(name) != nil {
			continue
		}
		if out == nil {
			out = h.Clone()
		}
		delete(out, name)
	}
	return out
}
