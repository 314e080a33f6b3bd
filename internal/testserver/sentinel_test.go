package testserver_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testserver"
)

func TestRedisSentinelFailover(t *testing.T) {
	start := time.Now()
	s := testserver.RedisSentinel(t)
	t.Logf("sentinels ready in %v", time.Since(start))
	url := s.URL()
	opt, err := redis.ParseFailoverURL("redis://" + strings.TrimPrefix(url, "redis+sentinel://"))
	if err != nil {
		t.Fatalf("ParseFailoverURL(%q): %v", url, err)
	}
	if opt.MasterName != s.MasterName || !slices.Equal(opt.SentinelAddrs, s.SentinelAddrs) {
		t.Fatalf("ParseFailoverURL(%q): got master %q, sentinels %v; want %q, %v",
			url, opt.MasterName, opt.SentinelAddrs, s.MasterName, s.SentinelAddrs)
	}
	client := redis.NewFailoverClient(opt)
	defer client.Close()

	const key = "admit:failover"
	setGet(t, client, key, "before")

	start = time.Now()
	killed := s.KillMaster(t)
	s.WaitFailover(t)
	t.Logf("failover of %s took %v", killed, time.Since(start))
	if got := s.MasterAddr(t); got == killed {
		t.Fatalf("after killing %s: got master %s, want the replica", killed, got)
	}
	start = time.Now()
	setGet(t, client, key, "after")
	t.Logf("client recovered in %v", time.Since(start))
}
