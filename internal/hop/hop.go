// Package hop names the hop-by-hop header fields: those that speak for one
// connection, which a proxy never passes on and an answer's own settings
// never set (RFC 9110, section 7.6.1, and RFC 2616's list as
// httputil.ReverseProxy keeps it). It is the one list of them in admit.
package hop

// headers are the hop-by-hop fields, canonical.
var headers = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// Header reports whether the canonical header name is hop-by-hop.
func Header(name string) bool { return headers[name] }
