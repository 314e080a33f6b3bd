package health

import (
	"context"
	"sync"
	"time"

	"connectrpc.com/grpchealth"
)

// DefaultTTL is how long [Cached] keeps an answer when its ttl argument is zero
// or negative.
const DefaultTTL = time.Second

// MaxServices bounds how many service names [Cached] remembers. Names come from
// callers (a probe's service field, the ?service= parameter of [Handler]), so
// the bound keeps memory flat whatever they send. A name that finds the cache
// full of unexpired entries is answered by the inner checker directly.
const MaxServices = 64

// Cached returns a checker that answers from inner at most once per ttl per
// service name, and answers NOT_SERVING for every service while draining
// reports true.
//
// The cache exists so that probes are cheap and cannot be multiplied into load
// on what inner checks: however many probes arrive, inner sees one call per
// service per ttl. When an answer has expired, one caller refreshes it while
// concurrent callers get the expired answer at once; when there is no answer
// yet, they wait for the refresh in flight (or for their own context). An
// error from inner is cached like a status, unless the refreshing caller's
// context ended first: a caller that gave up does not decide for everyone.
//
// Draining bypasses the cache, so a drain shows on the very next probe and
// load balancers stop routing new requests without waiting for the ttl.
//
// A nil draining means the server never drains, a ttl of zero or less means
// [DefaultTTL], and a nil now means [time.Now]. Cached panics if inner is nil,
// at wiring time, as http.Handle does with a nil handler. The checker is safe
// for concurrent use. It does not implement grpchealth.Watcher: a Watch call
// on the gRPC health service is answered Unimplemented.
func Cached(inner grpchealth.Checker, draining func() bool, ttl time.Duration, now func() time.Time) grpchealth.Checker {
	if inner == nil {
		panic("health: Cached: nil inner checker")
	}
	if draining == nil {
		draining = func() bool { return false }
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return &cached{
		inner:    inner,
		draining: draining,
		ttl:      ttl,
		now:      now,
		entries:  make(map[string]*entry),
	}
}

type cached struct {
	inner    grpchealth.Checker
	draining func() bool
	ttl      time.Duration
	now      func() time.Time

	mu      sync.Mutex // guards the following fields and every entry's fields
	entries map[string]*entry
}

// entry is one service's answer. Its fields are guarded by cached.mu.
type entry struct {
	answered bool // status and err hold an answer from inner
	status   grpchealth.Status
	err      error
	expires  time.Time

	// refreshed is non-nil while one caller asks inner, and closed when it
	// has stored the answer (or given up).
	refreshed chan struct{}
}

func (c *cached) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if c.draining() {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	service := req.Service
	c.mu.Lock()
	for {
		now := c.now()
		e := c.entries[service]
		switch {
		case e == nil:
			if !c.roomLocked(now) {
				c.mu.Unlock()
				return c.inner.Check(ctx, req)
			}
			e = &entry{}
			c.entries[service] = e
		case e.answered && now.Before(e.expires):
			status, err := e.status, e.err
			c.mu.Unlock()
			return answer(status, err)
		case e.refreshed != nil && e.answered:
			// Someone is refreshing an expired answer: serve it meanwhile.
			status, err := e.status, e.err
			c.mu.Unlock()
			return answer(status, err)
		case e.refreshed != nil:
			done := e.refreshed
			c.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			c.mu.Lock()
			continue // the refresh may have failed, or the entry gone
		}
		return c.refreshLocked(ctx, req, e)
	}
}

// refreshLocked asks inner for the answer of e's service, with c.mu held on
// entry and released on return. Other callers see the refresh in flight
// through e.refreshed.
func (c *cached) refreshLocked(ctx context.Context, req *grpchealth.CheckRequest, e *entry) (*grpchealth.CheckResponse, error) {
	done := make(chan struct{})
	e.refreshed = done
	c.mu.Unlock()

	var (
		res      *grpchealth.CheckResponse
		err      error
		returned bool // inner returned rather than panicked
	)
	defer func() {
		// Deferred so that a panicking inner checker does not leave waiters
		// blocked on a refresh that will never end.
		c.mu.Lock()
		e.refreshed = nil
		if returned && (err == nil || ctx.Err() == nil) {
			e.answered = true
			e.status, e.err = statusOf(res), err
			e.expires = c.now().Add(c.ttl)
		}
		c.mu.Unlock()
		close(done)
	}()
	res, err = c.inner.Check(ctx, req)
	returned = true
	if err != nil {
		return nil, err
	}
	return answer(statusOf(res), nil)
}

// roomLocked reports whether a new entry fits, sweeping expired entries that
// are not being refreshed when the cache is full.
func (c *cached) roomLocked(now time.Time) bool {
	if len(c.entries) < MaxServices {
		return true
	}
	for service, e := range c.entries {
		if e.refreshed == nil && !now.Before(e.expires) {
			delete(c.entries, service)
		}
	}
	return len(c.entries) < MaxServices
}

// answer builds a fresh response for each caller: callers own what Check
// returns and may modify it.
func answer(status grpchealth.Status, err error) (*grpchealth.CheckResponse, error) {
	if err != nil {
		return nil, err
	}
	return &grpchealth.CheckResponse{Status: status}, nil
}

// statusOf reads a checker's response; a nil response, which the interface
// does not forbid, means the status is unknown.
func statusOf(res *grpchealth.CheckResponse) grpchealth.Status {
	if res == nil {
		return grpchealth.StatusUnknown
	}
	return res.Status
}
