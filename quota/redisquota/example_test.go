package redisquota_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

func ExampleNew() {
	client := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:6379",
		// Required: a retried script could count one call twice, and
		// without context deadlines Config.Timeout cannot bound a call.
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		// One connection per concurrent caller, up to the server's limit:
		// each decision holds a connection for one round trip.
		PoolSize: 64,
	})
	defer client.Close()

	store, err := redisquota.New(client, redisquota.Config{
		Prefix:  "shop:quota:",
		Timeout: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}

	signup := quota.Rule{Name: "signup", Limit: 5, Window: time.Hour}
	d, err := store.Allow(context.Background(), signup, quota.Subject("203.0.113.7"))
	if err != nil {
		// The store failed; d follows the failure policy (here: refused).
		log.Print(err)
	}
	if !d.Allowed {
		fmt.Printf("429, retry in %v\n", d.RetryAfter.Round(time.Second))
		return
	}
	fmt.Printf("allowed, %d left this hour\n", d.Remaining)
}

func ExampleNew_cluster() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		// Required: no retries, no re-sends after a dropped connection, and
		// context deadlines, as for a single server.
		MaxRetries:            -1,
		MaxRedirects:          -1,
		ContextTimeoutEnabled: true,
	})
	defer client.Close()

	// Batching pipelines concurrent calls, split by go-redis across the
	// masters, and coalesces the calls on one bucket into one script run.
	store, err := redisquota.New(client, redisquota.Config{Prefix: "shop:quota:", Batch: 64})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
}

func ExampleNew_sentinel() {
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            "quota",
		SentinelAddrs:         []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
	})
	defer client.Close()

	store, err := redisquota.New(client, redisquota.Config{Prefix: "shop:quota:"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
}
