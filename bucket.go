package admit

import (
	"math"
	"time"
)

// bucket is one key's count, kept in 16 bytes with no lock of its own: its
// shard's mutex guards it. For a token bucket it holds the tokens at the
// time of its last update, with x/time/rate's arithmetic (continuous refill,
// never above the burst); for a fixed window, the requests counted and the
// window's start.
type bucket struct {
	tokens float64 // token bucket: tokens; fixed window: the count
	last   int64   // token bucket: nanoseconds of the last update; fixed window: the window's start
}

// refill describes how a group's buckets fill: at perNano tokens per
// nanosecond up to burst, or, for a fixed window, limit per window.
type refill struct {
	fixed   bool
	perNano float64 // token bucket: +Inf for rate.Inf
	burst   float64 // token bucket: the capacity; fixed window: the limit
	window  int64   // fixed window: its length in nanoseconds
}

// unlimited reports a refill of rate.Inf: such a bucket is always full.
func (f refill) unlimited() bool { return !f.fixed && math.IsInf(f.perNano, 1) }

// full returns a bucket with nothing spent at now.
func (f refill) full(now int64) bucket {
	if f.fixed {
		return bucket{last: f.windowStart(now)}
	}
	return bucket{tokens: f.burst, last: now}
}

// windowStart returns the start of the fixed window that holds now.
func (f refill) windowStart(now int64) int64 {
	start := now - now%f.window
	if now < 0 && now%f.window != 0 {
		start -= f.window
	}
	return start
}

// available returns what the bucket can spend at now: tokens, or what is left
// of the window's limit. A clock that went backwards refills nothing.
func (b *bucket) available(now int64, f refill) float64 {
	switch {
	case f.fixed:
		if now >= b.last+f.window {
			return f.burst // a later window: counted afresh
		}
		return f.burst - b.tokens
	case f.unlimited():
		return f.burst
	case now <= b.last:
		return b.tokens
	}
	return math.Min(f.burst, b.tokens+float64(now-b.last)*f.perNano)
}

// isFull reports a bucket that decides at now exactly as a fresh one would.
func (b *bucket) isFull(now int64, f refill) bool {
	return b.available(now, f) >= f.burst
}

// spend takes n at now. Callers check first that it is there, except for a
// fixed window's refused requests, which count too.
func (b *bucket) spend(now int64, n float64, f refill) {
	if f.fixed {
		if now >= b.last+f.window {
			*b = bucket{last: f.windowStart(now)}
		}
		b.tokens += n
		return
	}
	b.tokens = b.available(now, f) - n
	b.last = max(b.last, now)
}

// refund gives back n spent moments ago, for a request a later limit
// refused. A window that has ended since keeps nothing to give back.
func (b *bucket) refund(now int64, n float64, f refill) {
	if f.fixed {
		if now < b.last+f.window {
			b.tokens = max(0, b.tokens-n)
		}
		return
	}
	b.tokens = math.Min(f.burst, b.available(now, f)+n)
	b.last = max(b.last, now)
}

// secondsUntil returns the whole seconds, rounded up and at least 1, until
// the bucket can spend want: until tokens refill, or until the window ends.
func (b *bucket) secondsUntil(now int64, want float64, f refill) int {
	if f.fixed {
		return max(1, ceilNanos(b.last+f.window-now))
	}
	return max(1, f.seconds(want-b.available(now, f)))
}

// secondsToFull returns the whole seconds until the bucket is back to what a
// fresh one holds: the RateLimit field's t.
func (b *bucket) secondsToFull(now int64, f refill) int {
	if f.fixed {
		if now >= b.last+f.window {
			return 0
		}
		return ceilNanos(b.last + f.window - now)
	}
	return f.seconds(f.burst - b.available(now, f))
}

// seconds returns the whole seconds, rounded up, that refilling missing
// tokens takes; 0 when nothing is missing.
func (f refill) seconds(missing float64) int {
	if missing <= 0 || math.IsInf(f.perNano, 1) {
		return 0
	}
	secs := math.Ceil(missing / (f.perNano * 1e9))
	if secs > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(secs)
}

// ceilNanos rounds nanoseconds up to whole seconds.
func ceilNanos(ns int64) int {
	return int(min((ns+int64(time.Second)-1)/int64(time.Second), math.MaxInt32))
}
