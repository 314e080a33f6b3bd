package bench

import (
	"context"
	"net/http"
	"time"

	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
)

// goLimiter is sethvargo/go-limiter's httplimit middleware over its memory
// store, keyed by the TCP peer.
var goLimiter = Peer{
	Name:    "go-limiter",
	Module:  "github.com/sethvargo/go-limiter",
	Setup:   "httplimit.NewMiddleware over memorystore.New(Tokens n, Interval 1 minute; default sweep every 6 h) (n: 2^40 or 1); key: httplimit.IPKeyFunc() with no headers, the RemoteAddr host",
	Rejects: true,
	New: func(next http.Handler, l Limit) (http.Handler, func(), error) {
		cfg := &memorystore.Config{Tokens: ampleWindow, Interval: time.Minute}
		if l == Tight {
			cfg.Tokens, cfg.Interval = 1, tightPeriod
		}
		store, err := memorystore.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		m, err := httplimit.NewMiddleware(store, httplimit.IPKeyFunc())
		if err != nil {
			return nil, nil, err
		}
		return m.Handle(next), func() { _ = store.Close(context.Background()) }, nil
	},
}
