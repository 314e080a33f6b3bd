package memcachequota_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memcachequota"
)

// A counter on two memcached servers counts one hit in the minute's
// window of a hashed key; the caller decides from the count.
func ExampleNewCounter() {
	c, err := memcachequota.NewCounter(memcachequota.CounterConfig{Servers: []string{"cache-a:11211", "cache-b:11211"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	hits := []quota.Hit{{Key: quota.Subject("user:ann"), Window: time.Minute, N: 1, Limit: 100}}
	if _, err := c.Count(context.Background(), hits); err != nil {
		log.Print(err) // memcached did not answer in time: the failure policy decides
		return
	}
	fmt.Println(hits[0].Count <= hits[0].Limit)
}
