package memquota_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
)

func BenchmarkAllow(b *testing.B) {
	m, err := memquota.New(memquota.Config{MaxBuckets: 10_000, MeterProvider: noop.NewMeterProvider()})
	if err != nil {
		b.Fatal(err)
	}
	// Twice as many subjects as buckets, so the LRU evicts.
	subjects := make([]string, 20_000)
	for i := range subjects {
		subjects[i] = quota.Subject(fmt.Sprint(i))
	}
	for _, rule := range []quota.Rule{
		{Name: "fw", Limit: 100, Window: time.Minute},
		{Name: "gcra", Limit: 100, Window: time.Minute, Algorithm: quota.TokenBucket},
	} {
		b.Run(rule.Name+"/hot", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Allow(context.Background(), rule, subjects[0])
				}
			})
		})
		b.Run(rule.Name+"/distinct", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 0))
				for pb.Next() {
					m.Allow(context.Background(), rule, subjects[r.IntN(len(subjects))])
				}
			})
		})
	}
}

func BenchmarkCount(b *testing.B) {
	c, err := memquota.NewCounter(memquota.CounterConfig{MaxCounters: 10_000, MeterProvider: noop.NewMeterProvider()})
	if err != nil {
		b.Fatal(err)
	}
	// Twice as many keys as counters, so the table is full.
	keys := make([]string, 20_000)
	for i := range keys {
		keys[i] = quota.Subject(fmt.Sprint(i))
	}
	b.Run("hot", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			hits := []quota.Hit{{Key: keys[0], Window: time.Minute, N: 1}}
			for pb.Next() {
				c.Count(context.Background(), hits)
			}
		})
	})
	b.Run("distinct", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(rand.Uint64(), 0))
			hits := make([]quota.Hit, 1)
			for pb.Next() {
				hits[0] = quota.Hit{Key: keys[r.IntN(len(keys))], Window: time.Minute, N: 1}
				c.Count(context.Background(), hits)
			}
		})
	})
}
