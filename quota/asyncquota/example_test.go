package asyncquota_test

import (
	"context"
	"fmt"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/asyncquota"
	"github.com/admitgo/admit/quota/memquota"
)

func ExampleNew() {
	// In production the store is shared: a *pgquota.Store or a
	// *redisquota.Store. The in-memory store stands in for one here.
	shared, _ := memquota.New(memquota.Config{})
	c, err := asyncquota.New(shared, asyncquota.Config{Interval: 100 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go c.Run(ctx) // reconciles every interval until ctx ends

	rule := quota.Rule{Name: "api", Limit: 100, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 20}
	d, err := c.Allow(ctx, rule, quota.Subject("client 203.0.113.7"))
	fmt.Println(d.Allowed, d.Remaining, err)
	// With 3 replicas, together at most this many calls beyond the budget:
	fmt.Println(asyncquota.Bound(rule, 3, 100*time.Millisecond))
	// Output:
	// true 19 <nil>
	// 80
}

func ExampleBound() {
	link := quota.Rule{Name: "link", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 20}
	signup := quota.Rule{Name: "signup", Limit: 5, Window: time.Hour}
	for _, replicas := range []int{1, 2, 4} {
		fmt.Println(replicas, asyncquota.Bound(link, replicas, 100*time.Millisecond), asyncquota.Bound(signup, replicas, 100*time.Millisecond))
	}
	// Output:
	// 1 0 0
	// 2 22 5
	// 4 66 15
}
