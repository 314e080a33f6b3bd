package bench

import (
	"net/http"
	"time"

	tb "github.com/didip/tollbooth/v7"
	tblimiter "github.com/didip/tollbooth/v7/limiter"
)

// tollbooth is didip/tollbooth's x/time/rate buckets per key, looked up by
// RemoteAddr only: its NewLimiter reads X-Forwarded-For first unless told
// otherwise.
var tollbooth = Peer{
	Name:    "tollbooth",
	Module:  "github.com/didip/tollbooth/v7",
	Setup:   "LimitHandler(NewLimiter(max, &ExpirableOptions{DefaultExpirationTTL: 1 hour}).SetBurst(b)) with max, b = 1e9, 2^30 or 1/60, 1; key: SetIPLookups([\"RemoteAddr\"]) (the default reads X-Forwarded-For and X-Real-IP first) and SetIgnoreURL(true), so the key is the peer IP alone",
	Rejects: true,
	New: func(next http.Handler, l Limit) (http.Handler, func(), error) {
		max, burst := float64(ampleRate), ampleBurst
		if l == Tight {
			max, burst = 1/tightPeriod.Seconds(), 1
		}
		lmt := tb.NewLimiter(max, &tblimiter.ExpirableOptions{DefaultExpirationTTL: time.Hour})
		lmt.SetBurst(burst).SetIPLookups([]string{"RemoteAddr"}).SetIgnoreURL(true)
		return tb.LimitHandler(lmt, next), func() {}, nil
	},
}
