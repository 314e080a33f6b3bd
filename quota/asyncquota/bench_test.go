package asyncquota_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/asyncquota"
	"github.com/admitgo/admit/quota/memquota"
)

// BenchmarkAllow measures a local decision, parallel, beside the in-memory
// store's on the same buckets: one hot bucket, and 10,000 buckets in turn,
// as scripts/bench-stores loads the server.
func BenchmarkAllow(b *testing.B) {
	rule := quota.Rule{Name: "bench", Limit: 1 << 30, Window: time.Second, Algorithm: quota.TokenBucket}
	subjects := make([]string, 10_000)
	for i := range subjects {
		subjects[i] = quota.Subject(fmt.Sprint("client ", i))
	}
	for _, keys := range []int{1, len(subjects)} {
		mem, _ := memquota.New(memquota.Config{})
		async, _ := asyncquota.New(mem, asyncquota.Config{})
		for _, s := range subjects[:keys] {
			async.Allow(context.Background(), rule, s)
		}
		async.Reconcile(context.Background())
		for _, c := range []struct {
			name string
			c    quota.Charger
		}{{"memory", mem}, {"async", async}} {
			b.Run(fmt.Sprintf("%s/keys=%d", c.name, keys), func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						if _, err := c.c.Allow(context.Background(), rule, subjects[i%keys]); err != nil {
							b.Error(err)
						}
						i++
					}
				})
			})
		}
	}
}
