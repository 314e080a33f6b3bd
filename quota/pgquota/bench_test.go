package pgquota_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

// callers is how many goroutines call the store at once, and how many
// connections its pool has; scripts/bench-postgres runs pgbench with the same.
const callers = 8

// keys numbers distinct subjects across every round of a benchmark, so each
// distinct-key call creates a bucket, as pgbench's distinct-key run does.
var keys atomic.Uint64

// BenchmarkAllow measures decisions per second with callers concurrent
// callers on distinct buckets (each call inserts a row) and on one hot bucket
// (every call updates the same row). scripts/bench-postgres runs it beside
// pgbench on the bare statement.
func BenchmarkAllow(b *testing.B) {
	db := testpg.New(b)
	cfg := db.Config(b)
	cfg.MaxConns = callers
	cfg.MinConns = callers
	pool := db.Open(b, cfg)
	s, err := pgquota.New(pool, pgquota.Config{Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	warm(b, s)
	for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.GCRA} {
		// A limit no run reaches, so every call is an allowed increment.
		rule := quota.Rule{Name: "bench", Limit: 1 << 40, Window: time.Hour, Algorithm: alg}
		name := map[quota.Algorithm]string{quota.FixedWindow: "fixed", quota.GCRA: "gcra"}[alg]
		b.Run(name+"/distinct", func(b *testing.B) {
			run(b, func() string { return fmt.Sprintf("%032x", keys.Add(1)) }, s, rule)
		})
		hot := quota.Subject("hot")
		b.Run(name+"/hot", func(b *testing.B) {
			run(b, func() string { return hot }, s, rule)
		})
	}
}

func run(b *testing.B, subject func() string, s *pgquota.Store, rule quota.Rule) {
	b.ReportAllocs()
	b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var failed atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if d, err := s.Allow(ctx, rule, subject()); err != nil || !d.Allowed {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed or were refused", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// warm opens every connection and prepares the statements on each, so the
// first round does not measure connection setup.
func warm(b *testing.B, s *pgquota.Store) {
	b.Helper()
	var wg sync.WaitGroup
	for range 4 * callers {
		wg.Go(func() {
			for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.GCRA} {
				rule := quota.Rule{Name: "warm", Limit: 1 << 40, Window: time.Hour, Algorithm: alg}
				if _, err := s.Allow(context.Background(), rule, quota.Subject("warm")); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
