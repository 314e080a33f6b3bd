package redisquota_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/internal/testserver/outagetest"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/quotatest"
	"github.com/admitgo/admit/quota/redisquota"
)

// TestCluster runs the store on a private Redis Cluster of three masters
// with a replica each: the shared behaviour, pipelines split across masters
// included, and a crash of the master serving a hot bucket under load.
func TestCluster(t *testing.T) {
	cluster := testserver.RedisCluster(t)
	open := func(t *testing.T) *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 cluster.Addrs,
			MaxRetries:            -1,
			MaxRedirects:          -1,
			ContextTimeoutEnabled: true,
		})
		t.Cleanup(func() { c.Close() })
		return c
	}
	var prefixes atomic.Int64 // the cluster is the test's own: a counter keeps subtests apart
	t.Run("Charger", func(t *testing.T) {
		quotatest.TestCharger(t, func(t *testing.T, cfg quotatest.Config) (first, second quota.Charger) {
			prefix := fmt.Sprintf("charger:%d:", prefixes.Add(1))
			c := redisquota.Config{Now: cfg.Now, Failure: cfg.Failure, Timeout: 5 * time.Second}
			first = newStore(t, open(t), prefix, c)
			c.Batch = 64
			second = newStore(t, open(t), prefix, c)
			return first, second
		})
	})
	for _, batch := range []int{0, 16} {
		t.Run(fmt.Sprintf("failover, Batch %d", batch), func(t *testing.T) {
			c := open(t)
			f := failover{
				name:   fmt.Sprint("cluster ", batch),
				client: c,
				store:  newStore(t, c, "failover:", redisquota.Config{Batch: batch}),
			}
			f.other = otherMaster(t, c, f.name)
			var killed string
			f.kill = func(key string) { killed = cluster.KillMasterOf(t, key) }
			f.wait = func(key string) { cluster.WaitFailover(t, key) }
			f.run(t)
			cluster.Restart(t, killed) // whole again for the next subtest
		})
	}
}

// TestSentinel runs the store through a failover client on a private
// master with a replica, watched by three sentinels, and crashes the master
// under load.
func TestSentinel(t *testing.T) {
	for _, batch := range []int{0, 16} {
		t.Run(fmt.Sprintf("failover, Batch %d", batch), func(t *testing.T) {
			sentinel := testserver.RedisSentinel(t) // a group of its own: a failover leaves no replica
			c := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName:            sentinel.MasterName,
				SentinelAddrs:         sentinel.SentinelAddrs,
				MaxRetries:            -1,
				ContextTimeoutEnabled: true,
			})
			t.Cleanup(func() { c.Close() })
			f := failover{
				name:   fmt.Sprint("sentinel ", batch),
				client: c,
				store:  newStore(t, c, "failover:", redisquota.Config{Batch: batch}),
				kill:   func(string) { sentinel.KillMaster(t) },
				wait:   func(string) { sentinel.WaitFailover(t) },
			}
			f.run(t)
		})
	}
}

// The load of a failover test: callers goroutines, each making one call
// every loadEvery, at most loadCalls each, so that they stop by themselves.
const (
	callers   = 8
	loadEvery = 10 * time.Millisecond
	loadCalls = 1000
)

// recoveryBound is how long after the failover is complete calls may still
// fail: the store reloads a cluster's slot map once a second, and go-redis
// probes a server it could not dial once a second; plus a margin for a
// loaded machine.
const recoveryBound = 2 * time.Second

// A failover is one crash, under load, of the master serving a hot bucket,
// decided by the server's clock and failing closed.
type failover struct {
	name   string
	client redis.UniversalClient
	store  *redisquota.Store // on client with the prefix "failover:" and the default Timeout
	kill   func(key string)  // crashes the master serving key; returns once it has exited
	wait   func(key string)  // returns once a replica serves key as master
	// other, if not empty, is a subject whose bucket another master
	// serves; the load calls it too, to see what the crash costs it. A
	// cluster that requires full coverage (Redis's default) answers
	// CLUSTERDOWN everywhere until a replica has taken over.
	other string
}

// otherMaster returns a subject whose fixed-window bucket of the failover
// rule lives on another master than name's.
func otherMaster(t *testing.T, c *redis.ClusterClient, name string) string {
	t.Helper()
	ctx := context.Background()
	master := func(subject string) string {
		m, err := c.MasterForKey(ctx, fixedKey("failover:", "failover", subject))
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	}
	hot := master(quota.Subject(name))
	for i := range 100 {
		if s := quota.Subject(fmt.Sprint(name, " other ", i)); master(s) != hot {
			return s
		}
	}
	t.Fatalf("no subject found on another master than %s", hot)
	return ""
}

// The phases of a failover run, as a call sees them when it starts.
const (
	beforeKill = iota // the old master may answer
	killed            // the old master has exited
	failedOver        // a replica has taken over
)

// An outcome is what one call got.
type outcome struct {
	other   bool // a call on the other master's bucket
	phase   int
	start   time.Time
	elapsed time.Duration
	d       quota.Decision
	err     error
}

// run crashes the master under load and checks every call: a store error
// gets the fail-closed decision, any other call is allowed (the limit is
// never reached), and none takes longer than Timeout and outagetest.Margin;
// some calls fail after the crash; a call succeeds within recoveryBound of
// the failover; and the bucket's count, read from the new master, is at
// most the allowed calls plus those whose fate is unknown (failed ones,
// which may or may not have run) and at least the calls allowed after the
// crash. Calls the old master allowed may be missing from the count:
// replication is asynchronous, and a crash loses what the replica had not
// received yet; the run logs how many at least.
func (f failover) run(t *testing.T) {
	ctx := context.Background()
	rule := quota.Rule{Name: "failover", Limit: 1 << 30, Window: 24 * time.Hour}
	subject := quota.Subject(f.name)
	key := fixedKey("failover:", rule.Name, subject)
	closed := quota.Decision{RetryAfter: rule.Window, Limit: rule.Limit, Window: rule.Window}
	timeout := redisquota.DefaultTimeout

	var (
		phase    atomic.Int64
		mu       sync.Mutex // guards outcomes
		outcomes []outcome
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	call := func(other bool) outcome {
		o := outcome{other: other, phase: int(phase.Load()), start: time.Now()}
		s := subject
		if other {
			s = f.other
		}
		o.d, o.err = f.store.Allow(ctx, rule, s)
		o.elapsed = time.Since(o.start)
		mu.Lock()
		outcomes = append(outcomes, o)
		mu.Unlock()
		return o
	}
	// succeeded counts the calls that got a decision from Redis and
	// started at or after from.
	succeeded := func(from int) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, o := range outcomes {
			if !o.other && o.err == nil && o.phase >= from {
				n++
			}
		}
		return n
	}
	poll := func(what string, limit time.Duration, done func() bool) time.Duration {
		start := time.Now()
		for !done() {
			if time.Since(start) > limit {
				t.Fatalf("%s: not within %v", what, limit)
			}
			time.Sleep(loadEvery) // pace, not synchronisation: done decides
		}
		return time.Since(start)
	}

	before, err := f.client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for range callers {
		wg.Go(func() {
			tick := time.NewTicker(loadEvery)
			defer tick.Stop()
			for i := range loadCalls {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				call(f.other != "" && i%2 == 1)
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	poll("calls decided before the crash", 10*time.Second, func() bool { return succeeded(beforeKill) >= 50 })

	f.kill(key)
	killedAt := time.Now()
	phase.Store(killed)
	f.wait(key)
	failoverTook := time.Since(killedAt)
	phase.Store(failedOver)
	// The test's own calls, one after the other, find when the store
	// decides again.
	var lastErr error
	recovered := poll("a call decided after the failover", 30*time.Second, func() bool {
		o := call(false)
		if o.err != nil && (lastErr == nil || o.err.Error() != lastErr.Error()) {
			t.Logf("%v after the failover: %v", time.Since(killedAt), o.err)
		}
		lastErr = o.err
		return o.err == nil
	})
	if recovered > recoveryBound {
		t.Errorf("the store decided again %v after the failover, want within %v", recovered, recoveryBound)
	}
	poll("calls decided after the failover", 10*time.Second, func() bool { return succeeded(failedOver) >= 50 })
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close

	var allowed, unknown, allowedAfter, failedAfterKill, others, othersFailed int
	var slowest time.Duration
	for _, o := range outcomes {
		slowest = max(slowest, o.elapsed)
		if o.elapsed > timeout+outagetest.Margin {
			t.Errorf("a call in phase %d took %v, want at most Timeout %v and %v", o.phase, o.elapsed, timeout, outagetest.Margin)
		}
		if o.other {
			others++
			if o.err != nil {
				othersFailed++
				if othersFailed == 1 {
					t.Logf("the first failed call on another master's bucket: %v", o.err)
				}
				if o.d != closed {
					t.Errorf("a failed call (%v) got %+v, want the fail-closed %+v", o.err, o.d, closed)
				}
			}
			continue
		}
		switch {
		case o.err != nil:
			unknown++
			if o.phase >= killed {
				failedAfterKill++
			}
			if o.d != closed {
				t.Errorf("a failed call (%v) got %+v, want the fail-closed %+v", o.err, o.d, closed)
			}
		case !o.d.Allowed:
			t.Errorf("a call got %+v, want allowed: the limit is never reached", o.d)
		default:
			allowed++
			if o.phase >= killed {
				allowedAfter++
			}
		}
	}
	if failedAfterKill == 0 {
		t.Errorf("no call failed after the master was killed")
	}
	t.Logf("%d calls on the hot bucket: %d allowed (%d after the crash), %d failed; the failover took %v, the store decided again %v after it; slowest call %v",
		allowed+unknown, allowed, allowedAfter, unknown, failoverTook.Round(time.Millisecond), recovered.Round(time.Millisecond), slowest.Round(time.Millisecond))
	if f.other != "" {
		t.Logf("%d calls on another master's bucket: %d failed", others, othersFailed)
	}

	// The test's own client may still hold the old master's address for a
	// moment after the store's calls found the new one; what it reads next
	// is the test's check, not the store's behaviour.
	var after time.Time
	poll("the test's own client after the failover", 10*time.Second, func() bool {
		var err error
		after, err = f.client.Time(ctx).Result()
		return err == nil
	})
	v, err := f.client.Get(ctx, key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	parts := strings.Split(v, ":")
	count, err := strconv.Atoi(parts[len(parts)-1])
	if len(parts) != 3 || err != nil {
		t.Fatalf("GET %s: got %q, want <s>:<ns>:<count>", key, v)
	}
	if startsAnotherDay(before, after) {
		t.Logf("the window rolled over during the run; the count %d is not checked", count)
		return
	}
	if count > allowed+unknown {
		t.Errorf("count %d, want at most the %d allowed and %d failed calls: a call was counted twice", count, allowed, unknown)
	}
	if count < allowedAfter {
		t.Errorf("count %d, want at least the %d calls the new master allowed", count, allowedAfter)
	}
	if lost := allowed - count; lost > 0 {
		t.Logf("at least %d allowed calls are missing from the count: the crash lost them before they replicated", lost)
	}
}

// startsAnotherDay reports whether a and b lie in different 24-hour windows.
func startsAnotherDay(a, b time.Time) bool {
	return a.Truncate(24*time.Hour) != b.Truncate(24*time.Hour)
}
