package storedown

import (
	"sync/atomic"
	"time"
)

// Every is how often a [Breaker] whose store failed lets one call ask it
// again: often enough that decisions return to the store within a second
// of its recovery, even when the store's client takes a moment of its own
// to reconnect (go-redis redials a server it could not reach once a
// second), seldom enough that an outage costs two timeouts a second, not
// one a call.
const Every = int64(500 * time.Millisecond)

// A Breaker decides which calls ask a store that may be down. Its times
// are nanoseconds on a time line of the caller's choosing, the same for
// every call, and at least -Every (the door's clock, or the time since a
// service started). The zero value is a breaker whose store answers. A
// Breaker is safe for concurrent use; it holds no lock, so a caller that
// keeps state of its own in step with the store's (the door's fallback
// clock) guards its Failed and Answered with its own.
type Breaker struct {
	// until is when the next call may probe the store, or 0 while it
	// answers. It only moves later while the store is down, so a call
	// that started before the outage and fails late brings no early probe.
	until atomic.Int64
}

// Ask reports whether a call at now asks the store: always while it
// answers; while it is down, the first call at or past the probe time, and
// after it none for another Every.
func (b *Breaker) Ask(now int64) bool {
	until := b.until.Load()
	if until == 0 {
		return true
	}
	if now < until {
		return false
	}
	// Another call took the probe, or the store answered meanwhile.
	return b.until.CompareAndSwap(until, probeAt(now)) || b.until.Load() == 0
}

// Failed records that the store failed a call at now: no call asks it
// again before now+Every, or before a later probe time another call set.
// It reports whether the store was answering, that is whether this
// failure begins an outage.
func (b *Breaker) Failed(now int64) (first bool) {
	next := probeAt(now)
	for {
		until := b.until.Load()
		if until != 0 && until >= next {
			return false
		}
		if b.until.CompareAndSwap(until, next) {
			return until == 0
		}
	}
}

// Answered records that the store answered a call. It reports whether the
// store was down, that is whether this answer ends an outage.
func (b *Breaker) Answered() (back bool) {
	// Read first: while the store answers, calls share the line unwritten.
	return b.until.Load() != 0 && b.until.Swap(0) != 0
}

// Down reports whether the store failed since it last answered.
func (b *Breaker) Down() bool { return b.until.Load() != 0 }

// probeAt is the probe time after a failure or a probe at now, never 0,
// which means the store answers.
func probeAt(now int64) int64 {
	if t := now + Every; t != 0 {
		return t
	}
	return 1
}
