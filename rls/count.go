package rls

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/admitgo/admit/internal/storedown"
	"github.com/admitgo/admit/quota"
)

// count counts d's batch, following the failure policy when the counter
// fails, or without asking it while it is down and no probe is due. The
// hits the local over-limit cache holds are answered from it and not
// counted; when it holds them all, no store is asked, and the time is the
// service's clock's.
func (s *Service) count(ctx context.Context, d *decision) (time.Time, error) {
	now := s.now()
	cached := d.split(s.cache, now.Unix())
	if len(d.send) == 0 {
		return now, nil
	}
	err := errDown
	if s.counters.ask(d.send) {
		var at time.Time
		// The counters keep each store's breaker as it answers or fails.
		if at, err = s.tally(storeContext(ctx), &s.counters, d, cached); err == nil {
			d.merge()
			s.cache.remember(d.send, at.Unix())
			return at, nil
		}
	}
	s.failed(ctx, d, "rls: the counter cannot count", err)
	switch s.failure {
	case quota.FailClosed:
		for i := range d.send {
			d.send[i].Count = math.MaxUint64
		}
	case quota.FailOpen:
		for i := range d.send {
			d.send[i].Count = 0
		}
	case quota.FailLocal:
		at, err := s.tally(ctx, s.fallback, d, cached)
		if err != nil {
			return time.Time{}, unavailable(fmt.Errorf("%w: the fallback failed too: %w", errStore, err))
		}
		d.merge()
		return at, nil
	default:
		return time.Time{}, unavailable(fmt.Errorf("%w: %w", errStore, err))
	}
	d.merge()
	return now, nil
}

// tally counts d.send on c, each hit's N its descriptor's hits_addend.
// Under StopIncrementOverLimit it adds what envoyproxy/ratelimit's Redis
// cache adds: nothing at all when the local cache held one of the
// request's hits (cached); else it reads the counts first and, when a hit
// would take its count past its limit, adds only the hits that would.
func (s *Service) tally(ctx context.Context, c Counter, d *decision, cached bool) (time.Time, error) {
	send := d.send
	if !s.stop {
		for j, i := range d.from {
			send[j].N = d.batch[i].N
		}
		return c.Count(ctx, send)
	}
	for j := range send {
		send[j].N = 0
	}
	if cached {
		return c.Count(ctx, send)
	}
	if _, err := c.Count(ctx, send); err != nil {
		return time.Time{}, err
	}
	passes := false
	for j, i := range d.from {
		passes = passes || send[j].Count+d.batch[i].N > send[j].Limit
	}
	for j, i := range d.from {
		if n := d.batch[i].N; !passes || send[j].Count+n > send[j].Limit {
			send[j].N = n
		}
	}
	return c.Count(ctx, send)
}

// split fills d.send with the hits of d.batch to ask the counter about and
// d.from with their places in d.batch, and marks in d.sent the place of
// each in d.send, or -1 for one the local cache holds at sec (Unix
// seconds, the service's clock). It reports whether the cache held any.
func (d *decision) split(c *overCache, sec int64) bool {
	c.mark(d.batch, sec, &d.sent)
	cached := false
	for i, j := range d.sent {
		if j < 0 {
			cached = true
			continue
		}
		d.sent[i] = len(d.send)
		d.send = append(d.send, d.batch[i])
		d.from = append(d.from, i)
	}
	return cached
}

// merge copies the counts of d.send back to d.batch.
func (d *decision) merge() {
	for j, i := range d.from {
		d.batch[i].Count = d.send[j].Count
	}
}

// answered records that a store answered, and logs the end of an outage.
func (s *Service) answered(b *storedown.Breaker, msg string) {
	if b.Answered() {
		s.log.Info(msg)
	}
}

// failed counts and logs a store failure of d's request: once a request,
// however many of its calls to the counter and the limiter failed.
func (s *Service) failed(ctx context.Context, d *decision, msg string, err error) {
	if d.failed {
		return
	}
	d.failed = true
	s.metrics.failures.Add(ctx, 1, s.metrics.policies[s.failure]...)
	s.storeLog.Do(func() { s.log.Warn(msg, "policy", s.failure.String(), "err", err) })
}
