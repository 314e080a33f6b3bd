package redisquota_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

// scriptCounter is a go-redis hook that counts the script commands a client
// sends, alone or in pipelines.
type scriptCounter struct{ n atomic.Int64 }

func (h *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *scriptCounter) count(cmd redis.Cmder) {
	if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
		h.n.Add(1)
	}
}

// TestReconcileRunsOneScriptPerBatch reconciles 100 buckets of both
// algorithms through a plain client with Config.OneServer, which sends them
// as 2 script runs of at most 64 buckets, and through a client that cannot
// pipeline, which sends one per bucket: the two leave every bucket in the same state. The
// second round finds Redis's script cache flushed: each batch is answered
// NOSCRIPT, sent again with its source, and counted once.
func TestReconcileRunsOneScriptPerBatch(t *testing.T) {
	clk := newClock(t0)
	counter := &scriptCounter{}
	plain := testredis.Client(t)
	plain.AddHook(counter)
	// What is counted is script runs, not time: a loaded machine may take
	// longer than the default 100 ms for a batch of 64 buckets.
	const timeout = 5 * time.Second
	batched := newStore(t, plain, testredis.Prefix(t), redisquota.Config{Now: clk.Now, OneServer: true, Timeout: timeout})
	one := newStore(t, scriptsOnly{testredis.Client(t)}, testredis.Prefix(t), redisquota.Config{Now: clk.Now, Timeout: timeout})

	tallies := func() []quota.Tally {
		var out []quota.Tally
		for i := range 100 {
			rule := quota.Rule{Name: "r", Limit: 10, Window: time.Minute}
			if i%2 == 1 {
				rule.Algorithm = quota.TokenBucket
			}
			out = append(out, quota.Tally{Rule: rule, Subject: quota.Subject(fmt.Sprint("client ", i)), Hits: i % 4})
		}
		return out
	}
	for round, runs := range []int64{2, 4} { // the second adds to the buckets the first made
		if round == 1 {
			if err := plain.ScriptFlush(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		got, want := tallies(), tallies()
		before := counter.n.Load()
		if err := batched.Reconcile(context.Background(), got); err != nil {
			t.Fatal(err)
		}
		if err := one.Reconcile(context.Background(), want); err != nil {
			t.Fatal(err)
		}
		if n := counter.n.Load() - before; n != runs {
			t.Errorf("round %d: %d script commands for 100 buckets, want %d", round, n, runs)
		}
		for i := range got {
			if g, w := got[i], want[i]; !g.Now.Equal(w.Now) || g.Count != w.Count || !g.TAT.Equal(w.TAT) {
				t.Errorf("round %d, bucket %d: one script run gave %+v, one per bucket %+v", round, i, g, w)
			}
		}
		clk.Advance(time.Second)
	}
}

// TestBatchedDecisionsRunOneScript sends 8 calls on 8 buckets at once
// through a batching store with Config.OneServer: they leave in few script
// runs, not one per bucket, and each is decided as alone. Without
// OneServer, each bucket is a script run of its own.
func TestBatchedDecisionsRunOneScript(t *testing.T) {
	clk := newClock(t0)
	counter := &scriptCounter{}
	c := testredis.Client(t)
	c.AddHook(counter)
	s := newStore(t, c, testredis.Prefix(t), redisquota.Config{Now: clk.Now, Batch: 64, OneServer: true})
	rule := quota.Rule{Name: "b", Limit: 1, Window: time.Minute, Algorithm: quota.TokenBucket}
	for round, want := range []bool{true, false} {
		before := counter.n.Load()
		results := make(chan bool, 8)
		start := make(chan struct{})
		for i := range 8 {
			go func() {
				<-start
				d, err := s.Allow(context.Background(), rule, quota.Subject(fmt.Sprint("b", i)))
				if err != nil {
					t.Error(err)
				}
				results <- d.Allowed
			}()
		}
		close(start)
		for range 8 {
			if got := <-results; got != want {
				t.Errorf("round %d: Allowed %v, want %v", round, got, want)
			}
		}
		if n := counter.n.Load() - before; n >= 8 {
			t.Errorf("round %d: %d script runs for 8 buckets, want them batched", round, n)
		}
	}
}

// TestFailingBucketFailsAlone puts a value of the wrong type at one
// bucket's key, between two good ones of one batch script run: that
// bucket's run fails with Redis's error, and the buckets before and after
// it are counted and answered, as in a pipeline of one run per bucket.
func TestFailingBucketFailsAlone(t *testing.T) {
	clk := newClock(t0)
	c := testredis.Client(t)
	prefix := testredis.Prefix(t)
	s := newStore(t, c, prefix, redisquota.Config{Now: clk.Now, OneServer: true})
	rule := quota.Rule{Name: "f", Limit: 10, Window: time.Minute}
	bad := quota.Subject("bad")
	if err := c.RPush(context.Background(), fixedKey(prefix, "f", bad), "x").Err(); err != nil {
		t.Fatal(err)
	}
	before, after := quota.Subject("before"), quota.Subject("after")
	tallies := []quota.Tally{
		{Rule: rule, Subject: before, Hits: 1},
		{Rule: rule, Subject: bad, Hits: 1},
		{Rule: rule, Subject: after, Hits: 2},
	}
	err := s.Reconcile(context.Background(), tallies)
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Reconcile with a list at a bucket's key: %v, want a WRONGTYPE error", err)
	}
	look := []quota.Tally{{Rule: rule, Subject: before}, {Rule: rule, Subject: after}}
	if err := s.Reconcile(context.Background(), look); err != nil {
		t.Fatal(err)
	}
	if look[0].Count != 1 || look[1].Count != 2 {
		t.Errorf("the good buckets count %d and %d, want their 1 and 2 hits", look[0].Count, look[1].Count)
	}
}

// TestOutOfMemoryLeavesTheConnectionClean fills a private Redis's memory
// budget, so that every bucket's write fails with OOM, an error go-redis
// would stop reading an array at: two batch script runs in one pipeline
// fail every bucket with it, and the next calls on the same connection get
// their own answers, not the batch's leftovers.
func TestOutOfMemoryLeavesTheConnectionClean(t *testing.T) {
	srv := testserver.Redis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	clk := newClock(t0)
	s := newStore(t, c, "oom:", redisquota.Config{Now: clk.Now, OneServer: true})
	rule := quota.Rule{Name: "m", Limit: 10, Window: time.Minute}
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	tallies := make([]quota.Tally, 100)
	for i := range tallies {
		tallies[i] = quota.Tally{Rule: rule, Subject: quota.Subject(fmt.Sprint("c", i)), Hits: 1}
	}
	if err := s.Reconcile(ctx, tallies); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("Reconcile over maxmemory: %v, want an OOM error", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d, err := s.AllowN(ctx, rule, quota.Subject("after"), 1)
		if err != nil || !d.Allowed || d.Remaining != 9-i {
			t.Fatalf("call %d after the failed batch: %+v, %v, want allowed with %d left", i, d, err, 9-i)
		}
	}
}
