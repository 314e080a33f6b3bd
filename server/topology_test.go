package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
)

// TestRedisTopologies runs two replicas on a Redis Cluster and on a
// Sentinel group, through the URLs an operator writes: the link limit
// holds across them; when the master holding the client's bucket dies,
// requests get the failure policy's 503 promptly, never an unlimited pass;
// after the failover the store decides again.
func TestRedisTopologies(t *testing.T) {
	// The bucket's key carries the client's subject in a hash tag, so its
	// slot is the tag's; the proxy sees every test request from loopback.
	tag := "{" + quota.Subject("127.0.0.1/32") + "}"
	for _, tt := range []struct {
		name  string
		start func(t *testing.T) (url string, kill, failover func())
	}{
		{"cluster", func(t *testing.T) (string, func(), func()) {
			c := testserver.RedisCluster(t)
			return c.URL(), func() { c.KillMasterOf(t, tag) }, func() { c.WaitFailover(t, tag) }
		}},
		{"sentinel", func(t *testing.T) (string, func(), func()) {
			s := testserver.RedisSentinel(t)
			return s.URL(), func() { s.KillMaster(t) }, func() { s.WaitFailover(t) }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, kill, failover := tt.start(t)
			app := upstreamApp(t).URL
			replicas := []*running{
				start(t, append(appRoutes(app), "--store", url)...),
				start(t, append(appRoutes(app), "--store", url)...),
			}
			send := func(n int) map[int]int {
				answers := map[int]int{}
				for i := range n {
					resp, _ := replicas[i%2].do(t, "GET", "/l/abc", "")
					answers[resp.StatusCode]++
				}
				return answers
			}
			if got := send(30); got[http.StatusOK] != 20 || got[http.StatusTooManyRequests] != 10 {
				t.Fatalf("30 requests over two replicas: got %v, want 20 of 200 and 10 of 429", got)
			}

			kill()
			for i := range 10 {
				begin := time.Now()
				resp, _ := replicas[i%2].do(t, "GET", "/l/abc", "")
				// The store's timeout, with room for a loaded machine.
				if took := time.Since(begin); took > 2*time.Second {
					t.Errorf("request %d with the master down took %v", i, took)
				}
				if resp.StatusCode == http.StatusOK {
					t.Fatalf("request %d with the master down: 200, want the failure policy's 503 (or a 429 from a replica that still decides)", i)
				}
			}

			failover()
			deadline := time.Now().Add(15 * time.Second)
			for {
				resp, _ := replicas[0].do(t, "GET", "/l/abc", "")
				if resp.StatusCode != http.StatusServiceUnavailable {
					break // the store decides again
				}
				if time.Now().After(deadline) {
					t.Fatal("15 s after the failover the store still fails")
				}
			}
		})
	}
}
