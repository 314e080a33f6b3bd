package redisquota_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

// benchCallers is how many goroutines call the store at once;
// scripts/bench-redis runs redis-benchmark with as many clients.
var benchCallers = flag.Int("bench.callers", 8, "concurrent callers of BenchmarkAllow")

// benchSubjects are the distinct subjects a distinct-key run cycles
// through, as redis-benchmark's -r 100000 does.
var benchSubjects = func() []string {
	s := make([]string, 100_000)
	for i := range s {
		s[i] = quota.Subject(fmt.Sprint("client ", i))
	}
	return s
}()

// BenchmarkAllow measures decisions per second by the server's clock, with
// -bench.callers concurrent callers (8 by default) on distinct buckets and
// on one hot bucket,
// each call on its own (batch=0) and batched by the store (batch=64), which
// on the hot bucket coalesces the calls of a pipeline into one script run.
// scripts/bench-redis runs it beside redis-benchmark on the same script.
func BenchmarkAllow(b *testing.B) {
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.GCRA} {
		// A limit no run reaches, so every call is an allowed increment.
		rule := quota.Rule{Name: "bench", Limit: 1 << 30, Window: time.Minute, Algorithm: alg}
		name := map[quota.Algorithm]string{quota.FixedWindow: "fixed", quota.GCRA: "gcra"}[alg]
		for _, keys := range []string{"distinct", "hot"} {
			for _, batch := range []int{0, 64} {
				b.Run(fmt.Sprintf("%s/%s/batch=%d", name, keys, batch), func(b *testing.B) {
					s, err := redisquota.New(testredis.Client(b), redisquota.Config{
						Prefix: testredis.Prefix(b), Timeout: 2 * time.Second, Batch: batch,
					})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					subjects := benchSubjects
					if keys == "hot" {
						subjects = subjects[:1]
					}
					benchAllow(b, s, rule, subjects)
				})
			}
		}
	}
}

func benchAllow(b *testing.B, s *redisquota.Store, rule quota.Rule, subjects []string) {
	b.Helper()
	ctx := context.Background()
	var (
		failed   atomic.Int64
		firstErr atomic.Value
		next     atomic.Int64
	)
	b.ReportAllocs()
	b.SetParallelism((*benchCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			if _, err := s.Allow(ctx, rule, subjects[i%len(subjects)]); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	// A busy machine can push a call past its timeout; count such failures
	// beside the rate rather than lose the run.
	b.ReportMetric(float64(failed.Load()), "errors")
	if err := firstErr.Load(); err != nil {
		b.Logf("%d of %d decisions failed, the first with: %v", failed.Load(), b.N, err)
	}
}
