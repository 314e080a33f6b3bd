// Package upstream holds the HTTP transport admit forwards requests with. The
// bare proxy that scripts/bench-proxy compares admit against uses it too, so the
// comparison measures the door and not connection handling.
package upstream

import (
	"net/http"
	"time"
)

// MaxIdleConnsPerHost is how many idle connections to the upstream are kept
// for reuse. Go's default of 2 makes a loaded proxy open and close a
// connection for most requests; 256 covers a few hundred concurrent clients.
const MaxIdleConnsPerHost = 256

// Transport returns a new transport with http.DefaultTransport's dial and TLS
// handshake timeouts and HTTP/2 to TLS upstreams, room for
// MaxIdleConnsPerHost idle connections, and no proxy: HTTP_PROXY and its
// kin are meant for a host's outgoing traffic, not for the app behind it.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.MaxIdleConns = 4 * MaxIdleConnsPerHost
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	t.IdleConnTimeout = 90 * time.Second
	return t
}
