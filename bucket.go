package admit

import "math"

// bucket is a token bucket kept as the token count at the time of its last
// update, so a bucket costs 16 bytes and no lock of its own: its shard's mutex
// guards it. The arithmetic is that of golang.org/x/time/rate: tokens refill
// continuously at the rate and never exceed the burst.
type bucket struct {
	tokens float64
	last   int64 // Unix nanoseconds of the last update
}

// refill describes how a bucket fills: tokens per nanosecond and capacity.
type refill struct {
	perNano float64 // +Inf for rate.Inf
	burst   float64
}

// unlimited reports a refill of rate.Inf: such a bucket is always full.
func (f refill) unlimited() bool { return math.IsInf(f.perNano, 1) }

// full returns a bucket holding burst tokens at now.
func (f refill) full(now int64) bucket {
	return bucket{tokens: f.burst, last: now}
}

// tokensAt returns the tokens the bucket holds at now. A clock that went
// backwards refills nothing.
func (b *bucket) tokensAt(now int64, f refill) float64 {
	if f.unlimited() {
		return f.burst
	}
	if now <= b.last {
		return b.tokens
	}
	return math.Min(f.burst, b.tokens+float64(now-b.last)*f.perNano)
}

// spend takes n tokens at now. Callers check first that the tokens are there.
func (b *bucket) spend(now int64, n float64, f refill) {
	b.tokens = b.tokensAt(now, f) - n
	b.last = max(b.last, now)
}

// secondsUntil returns the whole seconds, rounded up and at least 1, until the
// bucket holds want tokens.
func (b *bucket) secondsUntil(now int64, want float64, f refill) int {
	return max(1, f.seconds(want-b.tokensAt(now, f)))
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
