package testserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testserver"
)

// setGet writes value to key through c and wants to read it back.
func setGet(t *testing.T, c redis.UniversalClient, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Set(ctx, key, value, 0).Err(); err != nil {
		t.Fatalf("SET %s %s: %v", key, value, err)
	}
	got, err := c.Get(ctx, key).Result()
	if err != nil || got != value {
		t.Fatalf("GET %s: got %q, %v; want %q", key, got, err, value)
	}
}

func TestRedisClusterFailover(t *testing.T) {
	start := time.Now()
	c := testserver.RedisCluster(t)
	t.Logf("cluster ready in %v", time.Since(start))
	if len(c.Addrs) != 6 {
		t.Fatalf("got %d nodes %v, want 6", len(c.Addrs), c.Addrs)
	}
	url := c.URL()
	opt, err := redis.ParseClusterURL("redis://" + strings.TrimPrefix(url, "redis+cluster://"))
	if err != nil {
		t.Fatalf("ParseClusterURL(%q): %v", url, err)
	}
	if !slices.Equal(opt.Addrs, c.Addrs) {
		t.Fatalf("ParseClusterURL(%q): got Addrs %v, want %v", url, opt.Addrs, c.Addrs)
	}
	client := redis.NewClusterClient(opt)
	defer client.Close()

	const key = "admit:failover"
	setGet(t, client, key, "before")
	before := c.Masters(t)
	if len(before) != 3 {
		t.Fatalf("got masters %v, want 3", before)
	}

	start = time.Now()
	killed := c.KillMasterOf(t, key)
	if !slices.Contains(before, killed) {
		t.Fatalf("KillMasterOf(%q) = %s, want one of the masters %v", key, killed, before)
	}
	c.WaitFailover(t, key)
	t.Logf("failover of %s took %v", killed, time.Since(start))
	after := c.Masters(t)
	if len(after) != 3 || slices.Contains(after, killed) {
		t.Fatalf("after killing %s: got masters %v, want 3 others", killed, after)
	}
	// go-redis keeps sending key's commands to the killed master, refused
	// dial after refused dial, until it reloads its slot map: on a MOVED
	// reply, or once the map is ten seconds old. Ask for the reload, as a
	// store would on a refused dial, rather than wait for it.
	start = time.Now()
	client.ReloadState(context.Background())
	setGet(t, client, key, "after")
	t.Logf("client recovered in %v", time.Since(start))
	fresh := redis.NewClusterClient(opt) // its seeds include the killed node
	defer fresh.Close()
	setGet(t, fresh, key, "fresh")

	start = time.Now()
	c.Restart(t, killed)
	t.Logf("restart of %s took %v", killed, time.Since(start))
	if got := c.Masters(t); !slices.Equal(got, after) {
		t.Fatalf("after restarting %s: got masters %v, want %v", killed, got, after)
	}
	node := redis.NewClient(&redis.Options{Addr: killed})
	defer node.Close()
	if role, err := node.Do(context.Background(), "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "slave" {
		t.Fatalf("ROLE on %s after its restart: got %v, %v; want a replica", killed, role, err)
	}
	setGet(t, client, key, "restarted")
}

func TestMissingRedisFails(t *testing.T) {
	for name, start := range map[string]func(testing.TB){
		"RedisCluster":  func(t testing.TB) { testserver.RedisCluster(t) },
		"RedisSentinel": func(t testing.TB) { testserver.RedisSentinel(t) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			f := &fatalTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				start(f)
			}()
			<-done
			if !strings.Contains(f.msg, "install Redis") {
				t.Errorf("got Fatalf %q, want it to say what to install", f.msg)
			}
		})
	}
}
