package quota

import (
	"context"
	"time"
)

// Hit is one addition to a counter, as a [Counter] takes it.
type Hit struct {
	// Key names the counter; any bytes a store accepts (quota/redisquota
	// refuses "{", quota/pgquota NUL bytes and invalid UTF-8,
	// quota/memcachequota anything but printable ASCII without spaces, and
	// keys past memcached's 250 bytes). Callers pass
	// a hash of what they count by, such as a [Subject], so that no raw
	// identifier reaches a store.
	Key string
	// Window is the counter's window, whole seconds and at least one; with
	// Key it names the counter.
	Window time.Duration
	// N is what to add; 0 reads the count.
	N uint64
	// Limit is the count past which the caller refuses; 0 means the caller
	// does not say. The shared stores keep every counter and ignore it; a
	// bounded counter (quota/memquota) never forgets a live counter whose
	// count reached it, nor, when it is 0, any live counter.
	Limit uint64
	// Count is set by the counter: the window's count after N was added.
	Count uint64
}

// Counter counts hits in fixed windows aligned to the Unix epoch, adding
// every hit whether or not it passes a limit, as envoyproxy/ratelimit's
// Redis cache counts; the caller decides from the counts. Count adds each
// hit's N in order, sets its Count, and returns the time it counted by; an
// error means the store could not count or refused a hit, and some hits may
// still have been counted: a shared store never retries the call. The Counters of quota/memquota,
// quota/redisquota, quota/pgquota and quota/memcachequota implement it, and admit rls counts
// through it. Implementations are safe for concurrent use.
type Counter interface {
	Count(ctx context.Context, hits []Hit) (time.Time, error)
}
