package main

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
	// methodOverrideHeaders make frameworks run a request as another method
	// than the one admit routed (Express's method-override, Rails, Laravel);
	// admit removes them unless --method-override is set.
	methodOverrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}
)

// managedHeaders holds every managed name, canonical, for the underscore
// check.
var managedHeaders = func() map[string]bool {
	m := make(map[string]bool)
	for _, list := range [][]string{forwardingHeaders, clientHeaders, methodOverrideHeaders} {
		for _, name := range list {
			m[http.CanonicalHeaderKey(name)] = true
		}
	}
	return m
}()

// stripHeaders removes from h the managed headers a client may not send
// through: the client-address headers, the method overrides unless
// keepOverrides, and every header whose name equals a managed one once
// underscores are read as hyphens. CGI and WSGI servers (Werkzeug,
// gunicorn, PHP) map X_Forwarded_For and X-Forwarded-For to one variable,
// so an underscore spelling would reach the app as the real header; nginx
// drops such names by default for the same reason.
func stripHeaders(h http.Header, keepOverrides bool) {
	for _, name := range clientHeaders {
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
