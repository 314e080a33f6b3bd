package bench

import (
	"net/http"

	throttledQuota "github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
)

// throttledKeys is the size of throttled's LRU memstore, as in its
// documentation's examples; without it the store grows without bound.
const throttledKeys = 65536

// throttled is throttled/v2's GCRA limiter over its LRU memory store, varied
// by RemoteAddr only.
var throttled = Peer{
	Name:    "throttled",
	Module:  "github.com/throttled/throttled/v2",
	Setup:   "HTTPRateLimiterCtx over NewGCRARateLimiterCtx(memstore.NewCtx(65,536 keys), RateQuota{PerSec(1e9), MaxBurst 2^30} or {PerMin(1), MaxBurst 0}); key: VaryBy{RemoteAddr: true}, the RemoteAddr host",
	Rejects: true,
	Bounded: true,
	New: func(next http.Handler, l Limit) (http.Handler, func(), error) {
		q := throttledQuota.RateQuota{MaxRate: throttledQuota.PerSec(ampleRate), MaxBurst: ampleBurst}
		if l == Tight {
			q = throttledQuota.RateQuota{MaxRate: throttledQuota.PerMin(1), MaxBurst: 0}
		}
		store, err := memstore.NewCtx(throttledKeys)
		if err != nil {
			return nil, nil, err
		}
		rl, err := throttledQuota.NewGCRARateLimiterCtx(store, q)
		if err != nil {
			return nil, nil, err
		}
		h := &throttledQuota.HTTPRateLimiterCtx{
			RateLimiter: rl,
			VaryBy:      &throttledQuota.VaryBy{RemoteAddr: true},
		}
		return h.RateLimit(next), func() {}, nil
	},
}
