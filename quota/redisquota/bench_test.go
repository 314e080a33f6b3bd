package redisquota_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

// BenchmarkAllow measures decisions per second against the test server, for
// one caller and for 256 concurrent callers: each call on its own with the
// go-redis default pool (10 connections per CPU) and with 256 connections,
// batched by the store (Config.Batch), and batched by go-redis's experimental
// autopipeliner for comparison (it does not bound a call by its context's
// deadline, so the store does not recommend it). Subjects
// cycle through 10,000, as distinct clients would. Compare with
// scripts/bench-redis, which runs redis-benchmark on the same script.
func BenchmarkAllow(b *testing.B) {
	subjects := make([]string, 10000)
	for i := range subjects {
		subjects[i] = quota.Subject(fmt.Sprint("client ", i))
	}
	rules := []quota.Rule{
		{Name: "bench", Limit: 1 << 30, Window: time.Minute},
		{Name: "bench", Limit: 1 << 30, Window: time.Minute, Algorithm: quota.GCRA},
	}
	setups := []struct {
		name    string
		callers int
		pool    int  // 0: the go-redis default
		batch   int  // Config.Batch
		auto    bool // go-redis's blocking autopipeliner instead
	}{
		{"callers=1", 1, 0, 0, false},
		{"callers=1/batch=64", 1, 0, 64, false},
		{"callers=256/pool=default", 256, 0, 0, false},
		{"callers=256/pool=256", 256, 256, 0, false},
		{"callers=256/batch=64", 256, 0, 64, false},
		{"callers=256/autopipeline", 256, 0, 0, true},
	}
	for _, rule := range rules {
		for _, su := range setups {
			b.Run(rule.Algorithm.String()+"/"+su.name, func(b *testing.B) {
				opt := testredis.Options(b)
				opt.PoolSize = su.pool
				var client redisquota.Client = testredis.ClientWith(b, opt)
				if su.auto {
					ap, err := client.(*redis.Client).AutoPipeline()
					if err != nil {
						b.Fatal(err)
					}
					client = ap
				}
				s, err := redisquota.New(client, redisquota.Config{Prefix: testredis.Prefix(b), Timeout: 2 * time.Second, Batch: su.batch})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				benchAllow(b, s, rule, subjects, su.callers)
			})
		}
	}
}

func benchAllow(b *testing.B, s *redisquota.Store, rule quota.Rule, subjects []string, callers int) {
	b.Helper()
	ctx := context.Background()
	var (
		failed   atomic.Int64
		firstErr atomic.Value
	)
	b.ReportAllocs()
	if callers == 1 {
		i := 0
		for b.Loop() {
			if _, err := s.Allow(ctx, rule, subjects[i%len(subjects)]); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
			i++
		}
	} else {
		b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(997))
			for pb.Next() {
				if _, err := s.Allow(ctx, rule, subjects[i%len(subjects)]); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				i++
			}
		})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	// A busy machine can push a call past its timeout; count such failures
	// beside the rate rather than lose the run.
	b.ReportMetric(float64(failed.Load()), "errors")
	if err := firstErr.Load(); err != nil {
		b.Logf("%d of %d decisions failed, the first with: %v", failed.Load(), b.N, err)
	}
}
