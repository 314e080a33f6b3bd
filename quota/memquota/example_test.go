package memquota_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
)

func ExampleNew() {
	// A fixed clock makes the output stable; leave Now nil in production.
	now := time.Date(2030, 1, 1, 12, 0, 30, 0, time.UTC)
	store, err := memquota.New(memquota.Config{
		MaxBuckets: 10_000,
		Now:        func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	rule := quota.Rule{Name: "signup", Limit: 2, Window: time.Minute}
	// Never count by the raw client key: hash it first.
	subject := quota.Subject("203.0.113.7")
	for range 3 {
		d, err := store.Allow(context.Background(), rule, subject)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry after %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// allowed=true remaining=1 retry after 30s
	// allowed=true remaining=0 retry after 30s
	// allowed=false remaining=0 retry after 30s
}
