package bench

import (
	"net/http"
	"net/netip"
	"sync"

	"golang.org/x/time/rate"
)

// naive is the floor: a mutex-guarded map from the peer address to an
// x/time/rate limiter. No headers, no metrics, no eviction.
var naive = Peer{
	Name:    "naive",
	Module:  "golang.org/x/time",
	Setup:   "map[netip.Addr]*rate.Limiter behind one sync.Mutex, rate.NewLimiter(1e9, 2^30) or (rate.Every(1 minute), 1); key: the RemoteAddr address; 429 with no headers; never evicts",
	Rejects: true,
	New: func(next http.Handler, l Limit) (http.Handler, func(), error) {
		n := &naiveLimiter{next: next, limit: ampleRate, burst: ampleBurst, m: map[netip.Addr]*rate.Limiter{}}
		if l == Tight {
			n.limit, n.burst = rate.Every(tightPeriod), 1
		}
		return n, func() {}, nil
	},
}

type naiveLimiter struct {
	next  http.Handler
	limit rate.Limit
	burst int

	mu sync.Mutex // guards m
	m  map[netip.Addr]*rate.Limiter
}

func (n *naiveLimiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		http.Error(w, http.StatusText(http.StatusBadRequest), http.StatusBadRequest)
		return
	}
	n.mu.Lock()
	l, ok := n.m[ap.Addr()]
	if !ok {
		l = rate.NewLimiter(n.limit, n.burst)
		n.m[ap.Addr()] = l
	}
	ok = l.Allow()
	n.mu.Unlock()
	if !ok {
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	n.next.ServeHTTP(w, r)
}
