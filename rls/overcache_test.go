package rls_test

import (
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/rls"
)

// cachedFixture is a service with the local over-limit cache on a watched
// memory counter, all on one injected clock.
func cachedFixture(t *testing.T, o rls.Options) (*fixture, *watched) {
	t.Helper()
	clock := testclock.New(time.Unix(1_699_999_990, 0))
	c := &watched{Counter: memCounter(t, clock)}
	o.Counter, o.Now, o.LocalCacheBytes = c, clock.Now, 1<<20
	return newFixtureOn(t, clock, o), c
}

// asks wants the counter asked n times so far.
func asks(t *testing.T, c *watched, n int64) {
	t.Helper()
	if got := c.asked.Load(); got != n {
		t.Fatalf("the counter was asked %d times, want %d", got, n)
	}
}

func user() *pb.RateLimitRequest { return req("edge", desc("user", "ann")) }

// TestLocalCache answers a descriptor the counter found over its limit
// from the cache until its window ends, without asking the counter, as
// envoyproxy/ratelimit's LOCAL_CACHE_SIZE_IN_BYTES; the next window asks
// again.
func TestLocalCache(t *testing.T) {
	f, c := cachedFixture(t, rls.Options{})
	playMulti(t, f, []multiStep{
		{0, user, []answer{{ok, 1, 50}}, ok},
		{0, user, []answer{{ok, 0, 50}}, ok},
		{0, user, []answer{{over, 0, 50}}, over},
	})
	asks(t, c, 3)
	playMulti(t, f, []multiStep{
		{0, user, []answer{{over, 0, 50}}, over},
		{49 * time.Second, user, []answer{{over, 0, 1}}, over},
	})
	asks(t, c, 3)
	if got := f.sum(t, "admit.rls.hits", "admit.rls.outcome", "over_limit_with_local_cache"); got != 2 {
		t.Fatalf("over_limit_with_local_cache: got %d, want 2", got)
	}
	if got := f.sum(t, "admit.rls.hits", "admit.rls.outcome", "over_limit"); got != 3 {
		t.Fatalf("over_limit: got %d, want 3 (one counted, two from the cache)", got)
	}
	// The next minute is a new window: the cache holds nothing for it.
	playMulti(t, f, []multiStep{{time.Second, user, []answer{{ok, 1, 60}}, ok}})
	asks(t, c, 4)
}

// TestLocalCacheBesideCounted answers the cached descriptor from the cache
// and counts the request's others; under StopIncrementOverLimit a request
// with a cached descriptor counts none of them, as the reference does.
func TestLocalCacheBesideCounted(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stop          bool
		tenant, after uint32 // tenant's limit_remaining beside the cached user, and alone after it
	}{
		{"counted", false, 97, 96},
		{"stop increment", true, 98, 97},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := cachedFixture(t, rls.Options{StopIncrementOverLimit: tc.stop})
			playMulti(t, f, []multiStep{
				{0, tenantOnly, []answer{{ok, 99, resetDay}}, ok},
				{0, tenantOnly, []answer{{ok, 98, resetDay}}, ok},
				{0, user, []answer{{ok, 1, 50}}, ok},
				{0, user, []answer{{ok, 0, 50}}, ok},
				{0, user, []answer{{over, 0, 50}}, over},
				{0, userAndTenant, []answer{{over, 0, 50}, {ok, tc.tenant, resetDay}}, over},
				{0, tenantOnly, []answer{{ok, tc.after, resetDay}}, ok},
			})
			calls := int64(7)
			if tc.stop {
				calls = 13 // a read and a count each, but the one beside the cached user
			}
			asks(t, c, calls)
		})
	}
}

// TestLocalCacheShadow keeps a shadow_mode rule's over-limit counter in the
// cache too, answering OK from it; under global shadow mode the cache
// answers as without, the request overall OK. Neither asks the counter.
func TestLocalCacheShadow(t *testing.T) {
	plan := func() *pb.RateLimitRequest { return req("edge", desc("plan", "free")) }
	const resetHour = 3600 - 1_699_999_990%3600
	f, c := cachedFixture(t, rls.Options{})
	playMulti(t, f, []multiStep{
		{0, plan, []answer{{ok, 0, resetHour}}, ok},
		{0, plan, []answer{{ok, 0, resetHour}}, ok},
		{0, plan, []answer{{ok, 0, resetHour}}, ok},
	})
	asks(t, c, 2)
	if got := f.sum(t, "admit.rls.hits", "admit.rls.outcome", "shadow_mode"); got != 2 {
		t.Fatalf("shadow_mode: got %d, want 2", got)
	}
	g, c := cachedFixture(t, rls.Options{ShadowMode: true})
	playMulti(t, g, []multiStep{
		{0, user, []answer{{ok, 1, 50}}, ok},
		{0, user, []answer{{ok, 0, 50}}, ok},
		{0, user, []answer{{over, 0, 50}}, ok},
		{0, user, []answer{{over, 0, 50}}, ok},
	})
	asks(t, c, 3)
}

// TestLocalCacheAllocs answers from the cache with no more allocations
// than a request the counter decides: the request's key and its answer.
func TestLocalCacheAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	allocs := func(f *fixture) float64 {
		for range 3 {
			f.decide(t, user())
		}
		return testing.AllocsPerRun(100, func() { f.decide(t, user()) })
	}
	counted := allocs(newFixture(t, rls.Options{}))
	for _, stop := range []bool{false, true} {
		f, c := cachedFixture(t, rls.Options{StopIncrementOverLimit: stop})
		got := allocs(f)
		if got > counted {
			t.Errorf("stop increment %v: %v allocations from the cache, want at most %v, a counted request's", stop, got, counted)
		}
		if n := c.asked.Load(); n > 6 {
			t.Errorf("stop increment %v: the counter was asked %d times, want the cache to answer", stop, n)
		}
	}
}
