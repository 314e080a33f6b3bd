package memcachequota_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memcachequota"
	"github.com/admitgo/admit/quota/memquota"
)

// newCounter returns a counter on a private memcached.
func newCounter(t *testing.T, cfg memcachequota.CounterConfig) (*memcachequota.Counter, *testserver.Server) {
	t.Helper()
	srv := testserver.Memcached(t)
	cfg.Servers = []string{srv.Addr}
	c, err := memcachequota.NewCounter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv
}

// raw sends one command to addr and returns memcached's answer, lines
// lines of it.
func raw(t *testing.T, addr, cmd string, lines int) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var b strings.Builder
	for range lines {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: %v after %q", cmd, err, b.String())
		}
		b.WriteString(line)
	}
	return b.String()
}

// TestCounterMatchesMemory counts one random sequence of hits, several
// keys and windows, reads among them, the clock moving on, on memcached
// and on the memory counter, and wants every count alike.
func TestCounterMatchesMemory(t *testing.T) {
	clock := testclock.New(time.Unix(1_699_999_990, 0))
	mc, _ := newCounter(t, memcachequota.CounterConfig{Now: clock.Now, Timeout: 5 * time.Second})
	mem, err := memquota.NewCounter(memquota.CounterConfig{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{quota.Subject("a"), quota.Subject("b"), quota.Subject("c")}
	windows := []time.Duration{time.Second, time.Minute, time.Hour}
	for step := range 400 {
		hits := make([]quota.Hit, 1+rng.IntN(4))
		for i := range hits {
			hits[i] = quota.Hit{Key: keys[rng.IntN(len(keys))], Window: windows[rng.IntN(len(windows))], N: uint64(rng.IntN(4))}
		}
		want := append([]quota.Hit(nil), hits...)
		mNow, err := mc.Count(context.Background(), hits)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		wNow, err := mem.Count(context.Background(), want)
		if err != nil {
			t.Fatal(err)
		}
		if !mNow.Equal(wNow.Truncate(time.Second)) {
			t.Fatalf("step %d: counted at %v, memory at %v", step, mNow, wNow)
		}
		for i := range hits {
			if hits[i].Count != want[i].Count {
				t.Fatalf("step %d, hit %d %+v: count %d, memory %d", step, i, hits[i], hits[i].Count, want[i].Count)
			}
		}
		clock.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
	}
}

// TestCounterWindows: a new window starts afresh, hits on one counter in
// one call count in order, a read adds nothing, and each key expires a
// second after its window ends, as memcached's own TTL says; a window
// longer than memcached's 30 days of relative expiry gets an absolute one.
func TestCounterWindows(t *testing.T) {
	start := time.Now().Truncate(time.Minute).Add(10 * time.Second)
	clock := testclock.New(start)
	c, srv := newCounter(t, memcachequota.CounterConfig{Now: clock.Now, Prefix: "t:"})
	count := func(hits ...quota.Hit) []uint64 {
		t.Helper()
		now, err := c.Count(context.Background(), hits)
		if err != nil {
			t.Fatal(err)
		}
		if !now.Equal(clock.Now().Truncate(time.Second)) {
			t.Fatalf("counted at %v, want %v", now, clock.Now())
		}
		var out []uint64
		for _, h := range hits {
			out = append(out, h.Count)
		}
		return out
	}
	k := quota.Subject("k")
	h := func(n uint64) quota.Hit { return quota.Hit{Key: k, Window: time.Minute, N: n} }
	if got := count(h(0), h(1), h(2), h(0)); fmt.Sprint(got) != "[0 1 3 3]" {
		t.Fatalf("counts %v, want [0 1 3 3]", got)
	}
	key := fmt.Sprintf("t:%s:60:%d", k, start.Unix()-10)
	// mg KEY t v: the seconds left and the value.
	if got, want := raw(t, srv.Addr, "mg "+key+" t v\r\n", 2), "VA 1 t51\r\n3\r\n"; got != want {
		t.Fatalf("memcached holds %q, want %q: expiring a second after the window", got, want)
	}
	clock.Advance(50 * time.Second)
	if got := count(h(0), h(1)); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("next window: counts %v, want [0 1]", got)
	}
	year := quota.Hit{Key: k, Window: 365 * 24 * time.Hour, N: 1}
	if got := count(year, year); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("a year's window: counts %v, want [1 2]", got)
	}
	sec := clock.Now().Unix()
	w := int64(365 * 24 * 3600)
	left := sec - sec%w + w + 1 - time.Now().Unix()
	got := raw(t, srv.Addr, fmt.Sprintf("mg t:%s:%d:%d t\r\n", k, w, sec-sec%w), 1)
	ttl, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(got, "HD t"), "\r\n"), 10, 64)
	// memcached keeps an absolute time by its own clock, which runs in
	// whole seconds from its start: a minute's play.
	if err != nil || ttl < left-120 || ttl > left+120 {
		t.Fatalf("a year's window: memcached answers %q, want about %d seconds left", got, left)
	}
}

// TestCounterKeys: a key memcached cannot carry as one token (a space, a
// CR LF that would end the command and start another, a control byte,
// more than 250 bytes with the prefix) refuses the call before anything is
// sent, so the command it hides never runs: a canary key stays, and the
// counter goes on counting.
func TestCounterKeys(t *testing.T) {
	c, srv := newCounter(t, memcachequota.CounterConfig{Timeout: 5 * time.Second})
	if got := raw(t, srv.Addr, "set canary 0 0 1\r\n1\r\n", 1); got != "STORED\r\n" {
		t.Fatalf("set: %q", got)
	}
	for _, key := range []string{
		"a b",
		"x 1\r\nflush_all\r\nincr x",
		"x\nflush_all",
		"x\x00",
		"x\x7f",
		"é",
		strings.Repeat("k", 250),
	} {
		hits := []quota.Hit{{Key: quota.Subject("ok"), Window: time.Minute, N: 1}, {Key: key, Window: time.Minute, N: 1}}
		if _, err := c.Count(context.Background(), hits); err == nil {
			t.Errorf("key %q: counted, want refused", key)
		}
		if hits[0].Count != 0 {
			t.Errorf("key %q: the call's other hit was counted (%d) before the refusal", key, hits[0].Count)
		}
	}
	if got := raw(t, srv.Addr, "get canary\r\n", 3); got != "VALUE canary 0 1\r\n1\r\nEND\r\n" {
		t.Fatalf("canary: %q, want it kept", got)
	}
	hits := []quota.Hit{{Key: quota.Subject("a b\r\nflush_all"), Window: time.Minute, N: 1}}
	if _, err := c.Count(context.Background(), hits); err != nil || hits[0].Count != 1 {
		t.Fatalf("a hashed key: %v, count %d; want 1", err, hits[0].Count)
	}
	for _, p := range []string{"a b", "a\r\n", strings.Repeat("p", 129)} {
		if _, err := memcachequota.NewCounter(memcachequota.CounterConfig{Servers: []string{srv.Addr}, Prefix: p}); err == nil {
			t.Errorf("prefix %q: accepted", p)
		}
	}
}

// TestCounterExact has 50 callers add 20 hits each to one counter that
// does not exist yet, so that they race to create it, and wants every
// count from 1 to 1,000 handed out exactly once: a lost add falls back to
// incr.
func TestCounterExact(t *testing.T) {
	c, _ := newCounter(t, memcachequota.CounterConfig{Timeout: 5 * time.Second, MaxIdleConns: 4})
	var mu sync.Mutex
	seen := map[uint64]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Go(func() {
			<-start
			for range 20 {
				hits := []quota.Hit{{Key: "k", Window: time.Hour, N: 1}}
				if _, err := c.Count(context.Background(), hits); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[hits[0].Count]++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	for n := uint64(1); n <= 1000; n++ {
		if seen[n] != 1 {
			t.Fatalf("count %d handed out %d times, want once", n, seen[n])
		}
	}
}

// TestCounterOutage: a memcached that is gone, or that takes the
// connection and never answers, fails the call within its timeout; once
// memcached is back, calls count again.
func TestCounterOutage(t *testing.T) {
	const timeout = 200 * time.Millisecond
	c, srv := newCounter(t, memcachequota.CounterConfig{Timeout: timeout})
	hit := func() ([]quota.Hit, time.Duration, error) {
		hits := []quota.Hit{{Key: "k", Window: time.Hour, N: 1}}
		begin := time.Now()
		_, err := c.Count(context.Background(), hits)
		return hits, time.Since(begin), err
	}
	if hits, _, err := hit(); err != nil || hits[0].Count != 1 {
		t.Fatalf("before: %v, count %d", err, hits[0].Count)
	}
	srv.Pause()
	if _, took, err := hit(); err == nil || took > timeout+time.Second {
		t.Fatalf("paused: %v after %v, want an error within %v", err, took, timeout)
	}
	srv.Resume()
	srv.Stop()
	if _, took, err := hit(); err == nil || took > timeout+time.Second {
		t.Fatalf("stopped: %v after %v, want an error within %v", err, took, timeout)
	}
	srv.Start()
	if hits, _, err := hit(); err != nil || hits[0].Count != 1 {
		t.Fatalf("restarted: %v, count %d; want 1, counting afresh", err, hits[0].Count)
	}
}

// TestNoBuckets refuses every rule, a token bucket in words that say
// why, with a RuleError.
func TestNoBuckets(t *testing.T) {
	var nb memcachequota.NoBuckets
	var _ quota.Charger = nb
	var _ quota.RuleChecker = nb
	err := nb.CheckRule(quota.Rule{Name: "r", Limit: 1, Window: time.Second, Algorithm: quota.TokenBucket})
	var rerr *quota.RuleError
	if !errorsAs(err, &rerr) || !strings.Contains(err.Error(), "cannot decide a token bucket atomically") {
		t.Fatalf("got %v, want a RuleError on token buckets", err)
	}
	if _, err := nb.Allow(context.Background(), quota.Rule{Name: "r", Limit: 1, Window: time.Second}, quota.Subject("s")); err == nil {
		t.Fatal("Allow: no error")
	}
}

func errorsAs(err error, target **quota.RuleError) bool { return errors.As(err, target) }

// TestCounterBoundsConnections: a memcached that accepts and never answers
// gets at most MaxConns connections, however many calls are in flight;
// the calls past them wait for one until their deadline, and every call
// ends with an error by it.
func TestCounterBoundsConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	c, err := memcachequota.NewCounter(memcachequota.CounterConfig{Servers: []string{l.Addr().String()}, MaxConns: 4, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Count(ctx, []quota.Hit{{Key: quota.Subject(strconv.Itoa(i)), Window: time.Minute, N: 1}}); err == nil {
				t.Error("a call to a memcached that never answers succeeded")
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(conns) > 4 {
		t.Errorf("%d connections to one server, want at most MaxConns 4", len(conns))
	}
}
