package redisquota_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
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
// on the hot bucket coalesces the calls of a pipeline into one script run,
// with a script run per bucket (one=false) or per 64 (one=true,
// Config.OneServer).
// scripts/bench-redis runs it beside redis-benchmark on the same script.
func BenchmarkAllow(b *testing.B) {
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		// A limit no run reaches, so every call is an allowed increment.
		rule := quota.Rule{Name: "bench", Limit: 1 << 30, Window: time.Minute, Algorithm: alg}
		name := map[quota.Algorithm]string{quota.FixedWindow: "fixed", quota.TokenBucket: "gcra"}[alg]
		for _, keys := range []string{"distinct", "hot"} {
			for _, mode := range []struct {
				batch int
				one   bool
			}{{0, false}, {64, false}, {64, true}} {
				b.Run(fmt.Sprintf("%s/%s/batch=%d/one=%v", name, keys, mode.batch, mode.one), func(b *testing.B) {
					s, err := redisquota.New(testredis.Client(b), redisquota.Config{
						Prefix: testredis.Prefix(b), Timeout: 2 * time.Second, Batch: mode.batch, OneServer: mode.one,
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

// serverCPU returns a function that reports the CPU time, in µs, the
// Redis server has spent since serverCPU was called, as its INFO reports it
// (used_cpu_sys plus used_cpu_user): what the store costs the server beside
// what it costs the caller. Other clients of the same server add to it.
func serverCPU(b *testing.B) func() float64 {
	b.Helper()
	c := testredis.Client(b)
	read := func() float64 {
		info, err := c.Info(context.Background(), "cpu").Result()
		if err != nil {
			b.Fatalf("INFO cpu: %v", err)
		}
		total := 0.0
		for _, line := range strings.Split(info, "\r\n") {
			name, value, _ := strings.Cut(line, ":")
			if name == "used_cpu_sys" || name == "used_cpu_user" {
				v, err := strconv.ParseFloat(value, 64)
				if err != nil {
					b.Fatalf("INFO cpu: %s: %v", line, err)
				}
				total += v
			}
		}
		return total * 1e6
	}
	start := read()
	return func() float64 { return read() - start }
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
	cpu := serverCPU(b)
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
	b.ReportMetric(cpu()/float64(b.N), "redis-µs/op")
	// A busy machine can push a call past its timeout; count such failures
	// beside the rate rather than lose the run.
	b.ReportMetric(float64(failed.Load()), "errors")
	if err := firstErr.Load(); err != nil {
		b.Logf("%d of %d decisions failed, the first with: %v", failed.Load(), b.N, err)
	}
}

// BenchmarkReconcile measures a reconcile of 1,000 buckets, each on a
// subject of its own with one hit, as quota/asyncquota sends it for a
// flood of distinct clients, one script run per bucket and (one=true,
// Config.OneServer) per 64: its time, and Redis's CPU per bucket.
func BenchmarkReconcile(b *testing.B) {
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		rule := quota.Rule{Name: "bench", Limit: 1 << 30, Window: time.Minute, Algorithm: alg}
		for _, one := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/one=%v", map[quota.Algorithm]string{quota.FixedWindow: "fixed", quota.TokenBucket: "gcra"}[alg], one), func(b *testing.B) {
				s, err := redisquota.New(testredis.Client(b), redisquota.Config{Prefix: testredis.Prefix(b), Timeout: 5 * time.Second, OneServer: one})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				tallies := make([]quota.Tally, 1000)
				b.ReportAllocs()
				cpu := serverCPU(b)
				for i := 0; b.Loop(); i++ {
					for j := range tallies {
						tallies[j] = quota.Tally{Rule: rule, Subject: benchSubjects[(i*len(tallies)+j)%len(benchSubjects)], Hits: 1}
					}
					if err := s.Reconcile(context.Background(), tallies); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(cpu()/float64(b.N*len(tallies)), "redis-µs/bucket")
			})
		}
	}
}
