package server

import (
	"net/http"
	"strings"
)

// withEnvoyHTTP is a's handler, which with a prefix (--envoy-http-prefix)
// answers the requests under it as Envoy's HTTP ext_authz (http_service)
// sends them: the original request line with the prefix (its path_prefix)
// before the target, and the original fields Envoy lets through
// (allowed_headers), among them X-Forwarded-For, to which Envoy appended
// the client it saw. Every other request is a forward-auth request.
func (a *authFront) withEnvoyHTTP(prefix string) http.Handler {
	if prefix == "" {
		return a
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target, ok := strings.CutPrefix(r.RequestURI, prefix)
		if !ok || !strings.HasPrefix(target, "/") {
			a.ServeHTTP(w, r)
			return
		}
		if !a.trusts(r.RemoteAddr) {
			a.answer(w, a.refuseBefore(r, errUntrusted))
			return
		}
		orig, err := envoyHTTPRequest(r, target)
		if err != nil {
			a.answer(w, a.refuseBefore(r, errForwarded))
			return
		}
		a.answer(w, a.decide(r.Context(), orig))
	})
}

// envoyHTTPRequest is the original request of Envoy's HTTP ext_authz request
// r, whose target after the prefix is target. Its peer is Envoy, so the
// client is found in X-Forwarded-For by the trusted-proxy rules, as the
// proxy finds it; a request without one is refused, since its client
// would be Envoy itself and every client would share one key. The scheme
// is X-Forwarded-Proto's, once.
func envoyHTTPRequest(r *http.Request, target string) (*http.Request, error) {
	proto := r.Header["X-Forwarded-Proto"]
	if len(r.Header["X-Forwarded-For"]) == 0 || len(proto) > 1 {
		return nil, errForwarded
	}
	scheme := ""
	if len(proto) == 1 {
		scheme = proto[0]
	}
	dropHopFields(r.Header)
	c := new(http.Request)
	return c, originalRequest(c, r, r.Method, target, r.Host, scheme)
}
