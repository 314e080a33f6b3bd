package bench

import (
	"net/http"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// ulule is ulule/limiter's stdlib middleware over its memory store, with
// forwarding headers untrusted (its default).
var ulule = Peer{
	Name:    "ulule",
	Module:  "github.com/ulule/limiter/v3",
	Setup:   "stdlib.NewMiddleware(limiter.New(memory.NewStore(), Rate{Period: 1 minute, Limit: n})) (n: 2^40 or 1; store cleaned every 30 s by default); key: the default key getter with TrustForwardHeader false and no ClientIPHeader, the RemoteAddr IP",
	Rejects: true,
	New: func(next http.Handler, l Limit) (http.Handler, func(), error) {
		r := limiter.Rate{Period: time.Minute, Limit: ampleWindow}
		if l == Tight {
			r = limiter.Rate{Period: tightPeriod, Limit: 1}
		}
		lim := limiter.New(memory.NewStore(), r, limiter.WithTrustForwardHeader(false))
		// The store's cleaner goroutine stops when the store is collected.
		return stdlib.NewMiddleware(lim).Handler(next), func() {}, nil
	},
}
