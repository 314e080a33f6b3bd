package pgquota_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

// conns is how many connections the store's pool has, and how many
// goroutines call an unbatched store at once; scripts/bench-postgres runs
// pgbench with as many.
const conns = 8

// batchedCallers is how many goroutines call a batching store at once: a
// proxy under load has many more requests deciding than it has connections.
const batchedCallers = 256

// proxyCallers is how many goroutines call a batching store at once in the
// "proxy" runs: the decisions in flight in front of wrk's 32 connections, as
// scripts/bench-stores loads the server.
const proxyCallers = 32

// keys numbers distinct subjects across every round of a benchmark, so each
// distinct-key call creates a bucket, as pgbench's distinct-key run does.
var keys atomic.Uint64

// BenchmarkAllow measures decisions per second on a pool of conns
// connections, on distinct buckets (each call inserts a row) and on one hot
// bucket (every call updates the same row): unbatched with conns callers,
// and batched (Config.Batch 64, as the server sets it) with batchedCallers
// and with proxyCallers.
// scripts/bench-postgres runs it beside pgbench on the bare statement.
func BenchmarkAllow(b *testing.B) {
	db := testpg.New(b)
	cfg := db.Config(b)
	cfg.MaxConns = conns
	cfg.MinConns = conns
	pool := db.Open(b, cfg)
	for _, mode := range []struct {
		name    string
		batch   int
		callers int
	}{{"single", 0, conns}, {"batched", 64, batchedCallers}, {"proxy", 64, proxyCallers}} {
		s, err := pgquota.New(pool, pgquota.Config{Timeout: 10 * time.Second, Batch: mode.batch})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
		warm(b, s)
		for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
			// A limit no run reaches, so every call is an allowed increment.
			rule := quota.Rule{Name: "bench", Limit: 1 << 40, Window: time.Hour, Algorithm: alg}
			name := mode.name + "/" + map[quota.Algorithm]string{quota.FixedWindow: "fixed", quota.TokenBucket: "gcra"}[alg]
			b.Run(name+"/distinct", func(b *testing.B) {
				run(b, pool, mode.callers, func() string { return fmt.Sprintf("%032x", keys.Add(1)) }, s, rule)
			})
			hot := quota.Subject("hot")
			b.Run(name+"/hot", func(b *testing.B) {
				run(b, pool, mode.callers, func() string { return hot }, s, rule)
			})
		}
		s.Close()
	}
}

func run(b *testing.B, pool *pgxpool.Pool, callers int, subject func() string, s *pgquota.Store, rule quota.Rule) {
	b.ReportAllocs()
	cpu := serverCPU(b, pool)
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
	if used, ok := cpu(); ok {
		b.ReportMetric(used/float64(b.N), "postgres-µs/op")
	}
}

// serverCPU returns a function that reports the CPU time, in µs, that the
// backends of pool's database and the WAL writer have spent since
// serverCPU was called, read from /proc, in clock ticks of 10 ms (Linux's
// USER_HZ): what the store costs the server beside what it costs the
// caller. It reports false when the server's processes cannot be read as
// postgres processes (a server on another machine or in a container), and
// the metric is then left out.
func serverCPU(b *testing.B, pool *pgxpool.Pool) func() (float64, bool) {
	b.Helper()
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() OR backend_type = 'walwriter'`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	read := func() (float64, bool) {
		total := 0.0
		for _, pid := range pids {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			// A server in a container of its own numbers its processes
			// apart: the pid may be another program here.
			if err != nil || !bytes.HasPrefix(stat[bytes.IndexByte(stat, ' ')+1:], []byte("(postgres)")) {
				return 0, false
			}
			// The fields after the command's closing parenthesis: utime and
			// stime are the 12th and 13th, in clock ticks of 1/100 s.
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) < 13 {
				return 0, false
			}
			for _, v := range f[11:13] {
				t, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, false
				}
				total += t * 1e4
			}
		}
		return total, true
	}
	start, ok := read()
	return func() (float64, bool) {
		end, ok2 := read()
		return end - start, ok && ok2
	}
}

// warm opens every connection and prepares the statements on each, so the
// first round does not measure connection setup.
func warm(b *testing.B, s *pgquota.Store) {
	b.Helper()
	var wg sync.WaitGroup
	for range 4 * conns {
		wg.Go(func() {
			for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
				rule := quota.Rule{Name: "warm", Limit: 1 << 40, Window: time.Hour, Algorithm: alg}
				if _, err := s.Allow(context.Background(), rule, quota.Subject("warm")); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkLowLoadLatency measures what batching adds to a decision when
// calls come one at a time: the p50 and p99 latency of one caller's
// sequential calls, unbatched and batched.
func BenchmarkLowLoadLatency(b *testing.B) {
	db := testpg.New(b)
	pool := db.Pool(b)
	for _, mode := range []struct {
		name  string
		batch int
	}{{"single", 0}, {"batched", 64}} {
		s, err := pgquota.New(pool, pgquota.Config{Timeout: 10 * time.Second, Batch: mode.batch})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
		warm(b, s)
		rule := quota.Rule{Name: "latency", Limit: 1 << 40, Window: time.Hour}
		b.Run(mode.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			subject := quota.Subject("low")
			for b.Loop() {
				start := time.Now()
				if _, err := s.Allow(context.Background(), rule, subject); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
		s.Close()
	}
}
