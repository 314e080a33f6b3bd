package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testserver"
)

// TestStoreFailLocal runs two replicas with --store-fail local on a Redis
// that goes down and comes back: while it is down each replica admits its
// half of the link budget's burst by its own buckets, as outcome fallback,
// and none answers 503; once it is back (and a probe is due) the store
// decides again.
func TestStoreFailLocal(t *testing.T) {
	redis := testserver.Redis(t)
	clk := testclock.New(time.Now())
	app := upstreamApp(t).URL
	var replicas []*running
	for range 2 {
		cfg := serverConfig(t, append(appRoutes(app), "--store", redis.URL, "--store-fail", "local", "--replicas", "2")...)
		cfg.Now = clk.Now
		replicas = append(replicas, startConfig(t, cfg))
	}
	send := func(n int) (answers map[int]int) {
		answers = map[int]int{}
		for i := range n {
			resp, _ := replicas[i%2].do(t, "GET", "/l/abc", "")
			answers[resp.StatusCode]++
		}
		return answers
	}
	count := func(outcome string) (n int) {
		for _, r := range replicas {
			n += r.count(t, "link", outcome)
		}
		return n
	}
	// The link budget's burst is 20, its rate 1 a second.
	if got := send(30); got[http.StatusOK] != 20 || got[http.StatusTooManyRequests] != 10 {
		t.Fatalf("store up, 30 requests: got %v, want 20 of 200 and 10 of 429", got)
	}

	redis.Stop()
	if got := send(30); got[http.StatusOK] != 20 || got[http.StatusTooManyRequests] != 10 {
		t.Errorf("store down, 30 requests: got %v, want 20 of 200 (10 a replica) and 10 of 429", got)
	}
	if got := count("fallback"); got != 20 {
		t.Errorf("fallback outcomes: got %d, want 20", got)
	}
	if got := count("store_error"); got != 0 {
		t.Errorf("store_error outcomes: got %d, want 0", got)
	}

	redis.Start() // empty: the store's bucket is full again
	clk.Advance(time.Second)
	if got := send(30); got[http.StatusOK] != 20 {
		t.Errorf("store back, 30 requests: got %v, want 20 of 200, the store's burst", got)
	}
	if got := count("fallback"); got != 20 {
		t.Errorf("fallback outcomes after the store is back: got %d, want still 20", got)
	}
	if got := count("ok"); got != 40 {
		t.Errorf("ok outcomes: got %d, want 40 (20 before the outage, 20 after)", got)
	}
}
