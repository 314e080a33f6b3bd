package bench

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	chirate "github.com/go-chi/httprate"
)

// httprate is go-chi/httprate's sliding-window counter with its in-memory
// counter, keyed as its README says for a server facing clients directly.
var httprate = Peer{
	Name:    "httprate",
	Module:  "github.com/go-chi/httprate",
	Setup:   "LimitBy(n, 1 minute, key) with the in-memory counter (n: 2^40 or 1); key: httprate.CanonicalizeIP(middleware.GetClientIP(ctx)) behind chi's middleware.ClientIPFromRemoteAddr, the README's setting for a server with no proxy; default X-RateLimit-* and Retry-After headers",
	Rejects: true,
	New: func(next http.Handler, l Limit) (http.Handler, func(), error) {
		n, window := ampleWindow, time.Minute
		if l == Tight {
			n, window = 1, tightPeriod
		}
		key := func(r *http.Request) (string, error) {
			return chirate.CanonicalizeIP(middleware.GetClientIP(r.Context())), nil
		}
		h := middleware.ClientIPFromRemoteAddr(chirate.LimitBy(n, window, key)(next))
		return h, func() {}, nil
	},
}
