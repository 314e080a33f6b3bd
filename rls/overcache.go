package rls

import (
	"math"
	"sync"
	"time"

	"github.com/admitgo/admit/internal/lru"
	"github.com/admitgo/admit/internal/meter"
)

// LocalCacheEntryBytes is what one entry of the local over-limit cache
// takes, as [Options].LocalCacheBytes counts it: the table keeps
// LocalCacheBytes / LocalCacheEntryBytes entries.
const LocalCacheEntryBytes = 160

// minLocalCacheBytes is the least a cache takes, as freecache, the
// reference's, takes at least 512 KiB whatever it is asked.
const minLocalCacheBytes = 512 << 10

// overCache is the local over-limit cache: the counters the counter found
// past their limits, each until its window ends, as envoyproxy/ratelimit
// keeps them in freecache. It only ever makes answers OVER_LIMIT, and the
// counter stays the truth: a counter forgotten to make room, or never
// seen, is asked again. A full table forgets an ended window first, else
// the least recently used. The nil *overCache holds nothing. It is safe
// for concurrent use.
type overCache struct {
	mu    sync.Mutex                // guards table
	table lru.Table[overKey, int64] // the window's end, Unix seconds
	// lookups counts the look-ups that found a hit's counter (and
	// answered it) and that did not (lookupHit, lookupMiss), as
	// freecache's hit and miss counts, the reference's ratelimit.localcache
	// stats; nil counts nothing.
	lookups *meter.Counts
}

// The counts of overCache.lookups.
const (
	lookupHit = iota
	lookupMiss
)

// overKey names one counter in one window, as the reference's cache key
// holds the window's start: an entry answers only in its own window.
type overKey struct {
	key    string
	window int64 // seconds
	start  int64 // Unix seconds
}

func newOverCache(bytes int) *overCache {
	n := max(bytes, minLocalCacheBytes) / LocalCacheEntryBytes
	return &overCache{table: lru.New[overKey, int64](min(n, math.MaxInt32))}
}

// keyAt is h's entry in the window that holds sec.
func keyAt(h *Hit, sec int64) overKey {
	w := int64(h.Window / time.Second)
	return overKey{h.Key, w, sec - ((sec%w)+w)%w}
}

// mark sets *sent to one place a hit of batch: -1 for a hit the cache
// holds at sec, 0 for the others.
func (c *overCache) mark(batch []Hit, sec int64, sent *[]int) {
	*sent = (*sent)[:0]
	if c == nil {
		for range batch {
			*sent = append(*sent, 0)
		}
		return
	}
	found := int64(0)
	c.mu.Lock()
	for i := range batch {
		place := 0
		if _, ok := c.table.Lookup(keyAt(&batch[i], sec)); ok {
			place = -1
			found++
		}
		*sent = append(*sent, place)
	}
	c.mu.Unlock()
	if c.lookups != nil {
		c.lookups.Add(lookupHit, found)
		c.lookups.Add(lookupMiss, int64(len(batch))-found)
	}
}

// remember adds the hits whose counts passed their limits, counted at sec
// (Unix seconds, the counter's clock).
func (c *overCache) remember(hits []Hit, sec int64) {
	if c == nil {
		return
	}
	for i := range hits {
		h := &hits[i]
		if h.Count <= h.Limit {
			continue
		}
		k := keyAt(h, sec)
		c.add(k, k.start+k.window, sec)
	}
}

// add keeps k until end, at sec.
func (c *overCache) add(k overKey, end, sec int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.table.Lookup(k); ok {
		*c.table.At(i) = end
		return
	}
	if !c.table.Full() {
		c.table.Insert(k, end)
		return
	}
	// Every live entry costs the same to forget; an ended one nothing.
	i := c.table.Victim(lru.Probes, func(end *int64) uint64 {
		if *end <= sec {
			return 0
		}
		return 1
	})
	c.table.Replace(i, k, end)
}

// len is how many entries c holds.
func (c *overCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.table.Len()
}
