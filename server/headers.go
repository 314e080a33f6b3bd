package server

import (
	"net/http"
	"strings"
)

// The request headers admit manages. This is the one list: the proxy strips
// by it, and docs/operators.md ("What the upstream receives") names the same
// headers.
var (
	// forwardingHeaders are the headers admit writes for the upstream; a
	// client's own are removed first (httputil.ReverseProxy's Rewrite removes
	// them too).
	forwardingHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"}
	// clientHeaders are further headers in which apps and frameworks look
	// for a client's address, scheme or port; admit removes them, so the
	// upstream gets admit's answers, never a client's claims.
	clientHeaders = []string{
		"X-Real-Ip", "True-Client-Ip", "Cf-Connecting-Ip", "X-Client-Ip", "Client-Ip",
		"X-Cluster-Client-Ip", "Fastly-Client-Ip", "X-Original-Forwarded-For",
		"X-Forwarded", "Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Ssl",
		"X-Forwarded-Scheme", "X-Forwarded-Prefix", "Front-End-Https", "X-Url-Scheme",
	}
	// routingHeaders carry a path, method or host that some stacks route
	// by instead of the request's own: X-Original-URL and X-Rewrite-URL
	// (Symfony before 3.4.14, Zend Framework, IIS URL Rewrite),
	// X-Original-URI and X-Original-Method (nginx auth_request setups),
	// X-Forwarded-Uri and X-Forwarded-Method (forward-auth servers behind
	// Traefik), X-Envoy-Original-Path, and X-Original-Host and
	// X-Forwarded-Server, which some frameworks take as the host. admit
	// removes them: the app must route what admit matched.
	routingHeaders = []string{
		"X-Original-Url", "X-Rewrite-Url", "X-Original-Uri", "X-Original-Method", "X-Forwarded-Uri",
		"X-Forwarded-Method", "X-Envoy-Original-Path", "X-Original-Host", "X-Forwarded-Server",
	}
	// methodOverrideHeaders make frameworks run a request as another method
	// than the one admit routed (Express's method-override, Rails, Laravel);
	// admit removes them unless --method-override is set.
	methodOverrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}
	// upgradeHeaders carry the parameters of an upgrade admit never
	// forwards: HTTP2-Settings is the first SETTINGS of the HTTP/2
	// connection an h2c upgrade asks for (RFC 7540 section 3.2.1), and no
	// allowlist may name h2c. admit removes them wherever they stand, named
	// in Connection or not. Upgrade and Connection themselves are
	// hop-by-hop, written afresh for an allowed protocol (upgrade.go).
	upgradeHeaders = []string{"Http2-Settings"}
)

// managedHeaders holds every managed name, canonical, for the underscore
// check.
var managedHeaders = func() map[string]bool {
	m := make(map[string]bool)
	for _, list := range [][]string{forwardingHeaders, clientHeaders, routingHeaders, methodOverrideHeaders, upgradeHeaders} {
		for _, name := range list {
			m[http.CanonicalHeaderKey(name)] = true
		}
	}
	return m
}()

// stripHeaders removes from h the managed headers a client may not send
// through: the client-address, routing and upgrade headers, the method overrides
// unless keepOverrides, and every header whose name equals a managed one once
// underscores are read as hyphens. CGI and WSGI servers (Werkzeug,
// gunicorn, PHP) map X_Forwarded_For and X-Forwarded-For to one variable,
// so an underscore spelling would reach the app as the real header; nginx
// drops such names by default for the same reason.
func stripHeaders(h http.Header, keepOverrides bool) {
	for _, name := range clientHeaders {
		delete(h, name)
	}
	for _, name := range routingHeaders {
		delete(h, name)
	}
	for _, name := range upgradeHeaders {
		delete(h, name)
	}
	if !keepOverrides {
		for _, name := range methodOverrideHeaders {
			delete(h, name)
		}
	}
	for name := range h {
		if strings.IndexByte(name, '_') >= 0 && managedHeaders[http.CanonicalHeaderKey(strings.ReplaceAll(name, "_", "-"))] {
			delete(h, name)
		}
	}
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
