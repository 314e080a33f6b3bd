package rls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/admitgo/admit/quota"
)

// TestOverCacheBound keeps at most the entries its bytes pay for, however
// many counters pass their limits, forgetting ended windows first.
func TestOverCacheBound(t *testing.T) {
	c := newOverCache(0) // the least: 512 KiB
	most := minLocalCacheBytes / LocalCacheEntryBytes
	sec := int64(1_699_999_990)
	over := func(key string, w time.Duration) Hit {
		return Hit{Key: key, Window: w, N: 1, Limit: 1, Count: 2}
	}
	// A second-long window that ends, then a flood of day-long ones.
	c.remember([]Hit{over("short", time.Second)}, sec)
	for i := range 2 * most {
		c.remember([]Hit{over(fmt.Sprint(i), 24*time.Hour)}, sec+1)
	}
	if got := c.len(); got != most {
		t.Fatalf("len %d after %d counters over, want %d", got, 2*most+1, most)
	}
	var sent []int
	last := over(fmt.Sprint(2*most-1), 24*time.Hour)
	c.mark([]Hit{last, over("0", 24*time.Hour), over("short", time.Second)}, sec+1, &sent)
	if want := []int{-1, 0, 0}; fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Fatalf("marks %v, want %v: the newest kept, the oldest and the ended forgotten", sent, want)
	}
	// A count at its limit is not over it.
	c.remember([]Hit{{Key: "at", Window: time.Minute, N: 1, Limit: 2, Count: 2}}, sec)
	if c.mark([]Hit{{Key: "at", Window: time.Minute}}, sec, &sent); sent[0] != 0 {
		t.Fatal("a count at its limit was kept as over it")
	}
}

// downCounter is a counter whose store is down.
type downCounter struct{}

func (downCounter) Count(context.Context, []Hit) (time.Time, error) {
	return time.Time{}, errors.New("connection refused")
}

// TestOverCacheNotFromFailure keeps nothing a failure policy answered: a
// closed policy's counts are not the store's, and kept they would refuse
// the descriptor after the store is back.
func TestOverCacheNotFromFailure(t *testing.T) {
	cfg, err := Parse("edge.yaml", []byte("domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []quota.Failure{quota.FailClosed, quota.FailLocal} {
		s, err := New(Options{Config: cfg, Counter: downCounter{}, Failure: f, LocalCacheBytes: 1, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		d := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "user", Value: "ann"}}}
		for range 3 {
			if _, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{d}}); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.cache.len(); n != 0 {
			t.Fatalf("%v: the cache holds %d entries, want none", f, n)
		}
	}
}
