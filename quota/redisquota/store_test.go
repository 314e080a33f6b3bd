package redisquota_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
	"github.com/admitgo/admit/quota/quotatest"
	"github.com/admitgo/admit/quota/redisquota"
)

// TestCharger runs the behaviour every store shares; each subtest gets a key
// prefix of its own. The second instance has its own client and batches its
// calls, which must change no decision.
func TestCharger(t *testing.T) {
	quotatest.TestCharger(t, func(t *testing.T, cfg quotatest.Config) (first, second quota.Charger) {
		prefix := testredis.Prefix(t)
		c := redisquota.Config{Now: cfg.Now, Failure: cfg.Failure, Timeout: 5 * time.Second}
		first = newStore(t, testredis.Client(t), prefix, c)
		c.Batch = 16
		second = newStore(t, testredis.Client(t), prefix, c)
		return first, second
	})
}

func TestNew(t *testing.T) {
	good := testredis.Options(t)
	retrying := testredis.Options(t)
	retrying.MaxRetries = 0 // go-redis's default: 3 retries
	deaf := testredis.Options(t)
	deaf.ContextTimeoutEnabled = false
	tests := []struct {
		name    string
		client  redisquota.Client
		cfg     redisquota.Config
		wantErr bool
	}{
		{"defaults", redis.NewClient(good), redisquota.Config{}, false},
		{"all fields", redis.NewClient(good), redisquota.Config{Prefix: "p:", Now: time.Now, Failure: quota.FailOpen, Timeout: time.Second}, false},
		{"nil client", nil, redisquota.Config{}, true},
		{"client retries", redis.NewClient(retrying), redisquota.Config{}, true},
		{"client ignores deadlines", redis.NewClient(deaf), redisquota.Config{}, true},
		{"cluster client retries", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{good.Addr}, MaxRetries: 2, ContextTimeoutEnabled: true}), redisquota.Config{}, true},
		{"cluster client re-sends after a dropped connection", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{good.Addr}, MaxRetries: -1, ContextTimeoutEnabled: true}), redisquota.Config{}, true},
		{"cluster client without re-sends", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{good.Addr}, MaxRetries: -1, MaxRedirects: -1, ContextTimeoutEnabled: true}), redisquota.Config{}, false},
		{"failover client retries", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{good.Addr}, ContextTimeoutEnabled: true}), redisquota.Config{}, true},
		{"failover client ignores deadlines", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{good.Addr}, MaxRetries: -1}), redisquota.Config{}, true},
		{"failover client", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{good.Addr}, MaxRetries: -1, ContextTimeoutEnabled: true}), redisquota.Config{Batch: 16}, false},
		{"failover cluster client retries", redis.NewFailoverClusterClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{good.Addr}, MaxRetries: 2, ContextTimeoutEnabled: true}), redisquota.Config{}, true},
		{"failover cluster client", redis.NewFailoverClusterClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{good.Addr}, MaxRetries: -1, ContextTimeoutEnabled: true}), redisquota.Config{}, false},
		{"cluster client ignores deadlines", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{good.Addr}, MaxRetries: -1, MaxRedirects: -1}), redisquota.Config{}, true},
		{"cluster client batching", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{good.Addr}, MaxRetries: -1, MaxRedirects: -1, ContextTimeoutEnabled: true}), redisquota.Config{Batch: 64}, false},
		{"ring ignores deadlines", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": good.Addr}, MaxRetries: -1}), redisquota.Config{}, true},
		{"ring", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": good.Addr}, MaxRetries: -1, ContextTimeoutEnabled: true}), redisquota.Config{}, false},
		{"one server", redis.NewClient(good), redisquota.Config{Batch: 64, OneServer: true}, false},
		{"one server, failover client", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{good.Addr}, MaxRetries: -1, ContextTimeoutEnabled: true}), redisquota.Config{Batch: 64, OneServer: true}, false},
		{"one server, cluster client", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{good.Addr}, MaxRetries: -1, MaxRedirects: -1, ContextTimeoutEnabled: true}), redisquota.Config{Batch: 64, OneServer: true}, true},
		{"one server, ring", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": good.Addr}, MaxRetries: -1, ContextTimeoutEnabled: true}), redisquota.Config{OneServer: true}, true},
		{"negative timeout", redis.NewClient(good), redisquota.Config{Timeout: -time.Second}, true},
		{"batch", redis.NewClient(good), redisquota.Config{Batch: 32}, false},
		{"negative batch", redis.NewClient(good), redisquota.Config{Batch: -1}, true},
		{"batch without pipelining", scriptsOnly{redis.NewClient(good)}, redisquota.Config{Batch: 32}, true},
		{"prefix with a closing brace", redis.NewClient(good), redisquota.Config{Prefix: "shop}:"}, false},
		{"prefix with a hash tag", redis.NewClient(good), redisquota.Config{Prefix: "{shop}:"}, true},
		{"prefix with an opening brace", redis.NewClient(good), redisquota.Config{Prefix: "shop{"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, ok := tt.client.(interface{ Close() error }); ok {
				t.Cleanup(func() { c.Close() })
			}
			s, err := redisquota.New(tt.client, tt.cfg)
			if err == nil {
				t.Cleanup(func() { s.Close() })
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, redisquota.ErrConfig) {
				t.Errorf("got %v, want an error wrapping ErrConfig", err)
			}
		})
	}
}

// scriptsOnly is a client that cannot pipeline.
type scriptsOnly struct{ c *redis.Client }

func (s scriptsOnly) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return s.c.EvalSha(ctx, sha1, keys, args...)
}

func (s scriptsOnly) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return s.c.Eval(ctx, script, keys, args...)
}

func (s scriptsOnly) Close() error { return s.c.Close() }

func TestClosedBatchingStoreFails(t *testing.T) {
	rule := quota.Rule{Name: "closed", Limit: 5, Window: time.Minute}
	s := newStore(t, testredis.Client(t), testredis.Prefix(t), redisquota.Config{Batch: 8, Failure: quota.FailOpen})
	decide(t, s, rule, quota.Subject("a"), 1)
	s.Close()
	got, err := s.Allow(context.Background(), rule, quota.Subject("a"))
	if !errors.Is(err, redisquota.ErrClosed) {
		t.Errorf("got error %v, want ErrClosed", err)
	}
	if want := (quota.Decision{Allowed: true, Remaining: 5, Limit: 5, Window: time.Minute}); got != want {
		t.Errorf("got %+v, want the fail-open decision %+v", got, want)
	}
}

// TestClockStepsBack runs random call sequences through the store and through
// the shared arithmetic with an injected clock stepping back as well as
// forward, as replicas' clocks do, and wants the same decision every time,
// and for GCRA the same stored arrival time. A fixed window stepped back into
// counts on in the later window the bucket holds (see [latestWindow]), where
// the suite steps back only within a window. Intervals that are not whole
// microseconds and times before 1970 make rounding show. Keys expire in real
// time, so every window here is a second or more: a key lives at least its
// grace of a second, longer than the test takes between two calls.
func TestClockStepsBack(t *testing.T) {
	tests := []struct {
		name  string
		rule  quota.Rule
		start time.Time
	}{
		{"fixed minute", quota.Rule{Name: "f", Limit: 7, Window: time.Minute}, t0},
		{"fixed odd window", quota.Rule{Name: "f", Limit: 3, Window: 1234567891 * time.Nanosecond}, t0},
		{"fixed odd window before 1970", quota.Rule{Name: "f", Limit: 3, Window: 1234567891 * time.Nanosecond}, time.Unix(-7, 5e8)},
		{"fixed window of 51 days and a nanosecond", quota.Rule{Name: "f", Limit: 50, Window: 51*24*time.Hour + 1}, t0},
		{"fixed year", quota.Rule{Name: "f", Limit: 100, Window: 365 * 24 * time.Hour}, t0},
		{"fixed year before 1970", quota.Rule{Name: "f", Limit: 100, Window: 365 * 24 * time.Hour}, time.Unix(-7, 5e8)},
		{"fixed before 1970", quota.Rule{Name: "f", Limit: 2, Window: 3 * time.Second}, time.Unix(-7, 5e8)},
		{"gcra thirds", quota.Rule{Name: "g", Limit: 3, Window: 10 * time.Second, Algorithm: quota.TokenBucket}, t0},
		{"gcra burst below limit", quota.Rule{Name: "g", Limit: 7, Window: time.Minute, Algorithm: quota.TokenBucket, Burst: 2}, t0},
		{"gcra burst above limit", quota.Rule{Name: "g", Limit: 13, Window: time.Hour, Algorithm: quota.TokenBucket, Burst: 40}, t0},
		{"gcra nanosecond interval", quota.Rule{Name: "g", Limit: 1e9 - 1, Window: time.Second, Algorithm: quota.TokenBucket, Burst: 5}, t0},
		{"gcra before 1970", quota.Rule{Name: "g", Limit: 5, Window: 7 * time.Second, Algorithm: quota.TokenBucket}, time.Unix(-3, 999999999)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(tt.start)
			s, c, prefix := testStore(t, clk)
			subject := quota.Subject(tt.name)
			rng := rand.New(rand.NewPCG(uint64(i), 4))
			interval := store.Interval(tt.rule)
			var m store.Model
			var fw latestWindow
			for step := range 300 {
				// Mostly forward, sometimes a little back, as clocks do.
				clk.Advance(time.Duration(rng.Int64N(int64(3*interval))) - interval/2)
				now := clk.Now()
				n := rng.IntN(4)
				want := m.AllowN(tt.rule, now, n)
				if tt.rule.Algorithm == quota.FixedWindow {
					want = fw.AllowN(tt.rule, now, n)
				}
				got := decide(t, s, tt.rule, subject, n)
				if got != want {
					t.Fatalf("step %d at %v, n=%d: got %+v, want %+v", step, now, n, got, want)
				}
				if tt.rule.Algorithm == quota.TokenBucket && m.TAT.After(now) {
					v, err := c.Get(context.Background(), gcraKey(prefix, tt.rule.Name, subject)).Result()
					if err != nil {
						t.Fatalf("step %d: reading the bucket: %v", step, err)
					}
					if wantV := fmt.Sprintf("%d:%d", m.TAT.Unix(), m.TAT.Nanosecond()); v != wantV {
						t.Fatalf("step %d: stored tat: got %s, want %s", step, v, wantV)
					}
				}
			}
		})
	}
}

// latestWindow is the fixed-window model of a store that keeps one window per
// bucket, as this store and the in-memory one do: a clock that steps back
// into an earlier window counts on in the later window the bucket holds,
// rather than start the earlier one afresh, and a look writes nothing.
type latestWindow struct {
	start time.Time
	count int64
	seen  bool
}

func (m *latestWindow) AllowN(rule quota.Rule, now time.Time, n int) quota.Decision {
	start, count := store.WindowStart(now, rule.Window), int64(0)
	if m.seen && !m.start.Before(start) {
		start, count = m.start, m.count
	}
	count += int64(n)
	if n > 0 {
		m.start, m.count, m.seen = start, count, true
	}
	return store.FixedWindowDecision(rule, now, count, n)
}

// TestKeys checks the key names, the values, and that every key the store
// writes expires: a fixed window's at the window's end, a GCRA bucket's when
// it is full again, each plus the grace of min(Window, 1s).
func TestKeys(t *testing.T) {
	ctx := context.Background()
	subject := quota.Subject("key test")
	start := store.WindowStart(t0, time.Minute)
	tests := []struct {
		name    string
		rule    quota.Rule
		n       int
		key     func(prefix string) string
		value   string
		wantTTL time.Duration // the most the key may live, before rounding up to a millisecond
	}{
		{
			name:    "fixed window",
			rule:    quota.Rule{Name: "fw", Limit: 5, Window: time.Minute},
			n:       2,
			key:     func(prefix string) string { return fixedKey(prefix, "fw", subject) },
			value:   fmt.Sprintf("%d:0:2", start.Unix()),
			wantTTL: start.Add(time.Minute).Sub(t0) + time.Second,
		},
		{
			name:    "gcra",
			rule:    quota.Rule{Name: "gc", Limit: 10, Window: time.Minute, Algorithm: quota.TokenBucket},
			n:       3, // 3 tokens refill in 18s
			key:     func(prefix string) string { return gcraKey(prefix, "gc", subject) },
			value:   fmt.Sprintf("%d:%d", t0.Unix()+18, t0.Nanosecond()),
			wantTTL: 18*time.Second + time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t0)
			s, c, prefix := testStore(t, clk)
			key := tt.key(prefix)
			decide(t, s, tt.rule, subject, 0)
			if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Fatalf("after a look: got Exists %d (%v), want 0: a look must not write", n, err)
			}
			decide(t, s, tt.rule, subject, tt.n)
			ttl, err := c.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			// Redis counts the TTL down in real time from when it was set.
			if ttl <= tt.wantTTL-time.Second || ttl > tt.wantTTL.Truncate(time.Millisecond)+time.Millisecond {
				t.Errorf("PTTL %s: got %v, want within a second below %v", key, ttl, tt.wantTTL)
			}
			if v, err := c.Get(ctx, key).Result(); err != nil || v != tt.value {
				t.Errorf("GET %s: got %q (%v), want %q", key, v, err, tt.value)
			}
			keys, err := c.Keys(ctx, prefix+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{key}; !slices.Equal(keys, want) {
				t.Errorf("keys: got %v, want %v", keys, want)
			}
		})
	}
}

// TestKeysShareTheSubjectsSlot wants every key of one subject, whatever the
// rule or algorithm, to hash to the subject on Redis Cluster, so that all of
// them live in one slot; and a prefix or rule name with a closing brace not
// to change that.
func TestKeysShareTheSubjectsSlot(t *testing.T) {
	ctx := context.Background()
	subject := quota.Subject("one slot")
	c := testredis.Client(t)
	prefix := testredis.Prefix(t) + "}"
	s := newStore(t, c, prefix, redisquota.Config{Now: newClock(t0).Now})
	for _, rule := range []quota.Rule{
		{Name: "a", Limit: 5, Window: time.Minute},
		{Name: "a", Limit: 5, Window: time.Minute, Algorithm: quota.TokenBucket},
		{Name: "b}", Limit: 5, Window: time.Hour},
		{Name: "", Limit: 5, Window: time.Hour, Algorithm: quota.TokenBucket},
	} {
		decide(t, s, rule, subject, 1)
		if err := s.Refund(ctx, rule, subject, 1); err != nil {
			t.Fatal(err)
		}
		decide(t, s, rule, subject, 1)
	}
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 4 {
		t.Errorf("keys: got %v, want 4", keys)
	}
	for _, k := range keys {
		if got := hashTag(k); got != subject {
			t.Errorf("key %s hashes %q, want the subject %q", k, got, subject)
		}
	}
}

// TestFixedWindowKeyHoldsOneWindow checks the fixed-window bucket across
// windows: a new window starts afresh with a new time to live, one clock
// stepped back counts on in the later window and keeps its time to live, and
// a refund gives back only in the window the bucket holds.
func TestFixedWindowKeyHoldsOneWindow(t *testing.T) {
	ctx := context.Background()
	rule := quota.Rule{Name: "one", Limit: 3, Window: time.Minute}
	subject := quota.Subject("one window")
	clk := newClock(store.WindowStart(t0, time.Minute).Add(30 * time.Second))
	s, c, prefix := testStore(t, clk)
	key := fixedKey(prefix, rule.Name, subject)
	state := func() (string, time.Duration) {
		t.Helper()
		v, err := c.Get(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v, c.PTTL(ctx, key).Val()
	}
	first := store.WindowStart(clk.Now(), time.Minute)
	decide(t, s, rule, subject, 3)
	clk.Advance(time.Minute) // the next window
	if d := decide(t, s, rule, subject, 1); !d.Allowed || d.Remaining != 2 {
		t.Errorf("in the next window: got %+v, want allowed with 2 remaining", d)
	}
	v, ttl := state()
	if want := fmt.Sprintf("%d:0:1", first.Add(time.Minute).Unix()); v != want {
		t.Errorf("next window: got %q, want %q", v, want)
	}
	if ttl <= 30*time.Second || ttl > 31*time.Second {
		t.Errorf("next window: PTTL %v, want the 30s left in it and the 1s grace", ttl)
	}
	clk.Advance(-time.Minute) // back into the first window: count on in the later one
	if d := decide(t, s, rule, subject, 1); !d.Allowed || d.Remaining != 1 || d.RetryAfter != 30*time.Second {
		t.Errorf("stepped back: got %+v, want allowed with 1 remaining, RetryAfter 30s", d)
	}
	if err := s.Refund(ctx, rule, subject, 2); err != nil {
		t.Fatal(err)
	}
	if v2, ttl2 := state(); v2 != fmt.Sprintf("%d:0:2", first.Add(time.Minute).Unix()) || ttl2 > ttl {
		t.Errorf("stepped back and refunded: got %q, PTTL %v; want the later window's count of 2 kept, its PTTL at most %v", v2, ttl2, ttl)
	}
	clk.Advance(time.Minute)
	if err := s.Refund(ctx, rule, subject, 2); err != nil {
		t.Fatal(err)
	}
	if v, _ := state(); v != fmt.Sprintf("%d:0:0", first.Add(time.Minute).Unix()) {
		t.Errorf("refunded in its window: got %q, want a count of 0", v)
	}
	clk.Advance(time.Minute) // a window later: nothing to give back
	if err := s.Refund(ctx, rule, subject, 1); err != nil {
		t.Fatal(err)
	}
	if v, _ := state(); v != fmt.Sprintf("%d:0:0", first.Add(time.Minute).Unix()) {
		t.Errorf("refund after its window: got %q, want it unchanged", v)
	}
}

// TestNoScript flushes Redis's script cache between calls: the store sends
// the script again and the call counts once.
func TestNoScript(t *testing.T) {
	tests := []struct {
		name string
		rule quota.Rule
		want quota.Decision // of the second call
	}{
		{"fixed window", quota.Rule{Name: "ns", Limit: 5, Window: time.Minute}, quota.Decision{Allowed: true, Remaining: 3, RetryAfter: 60*time.Second - time.Duration(t0.Second()*1e9+t0.Nanosecond()), Limit: 5, Window: time.Minute}},
		{"gcra", quota.Rule{Name: "ns", Limit: 5, Window: time.Minute, Algorithm: quota.TokenBucket}, quota.Decision{Allowed: true, Remaining: 3, Limit: 5, Window: time.Minute}},
	}
	for _, tt := range tests {
		for _, batch := range []int{0, 8} {
			t.Run(fmt.Sprintf("%s, Batch %d", tt.name, batch), func(t *testing.T) {
				clk := newClock(t0)
				c := testredis.Client(t)
				s := newStore(t, c, testredis.Prefix(t), redisquota.Config{Now: clk.Now, Batch: batch})
				subject := quota.Subject("noscript")
				decide(t, s, tt.rule, subject, 1)
				if err := c.ScriptFlush(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
				if got := decide(t, s, tt.rule, subject, 1); got != tt.want {
					t.Errorf("after SCRIPT FLUSH: got %+v, want %+v", got, tt.want)
				}
			})
		}
	}
}

// unreachable returns the address of a port nothing listens on.
func unreachable(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silent returns the address of a server that accepts connections and never
// answers.
func silent(t *testing.T) string { return testserver.Silent(t) }

func TestFailurePolicy(t *testing.T) {
	rule := quota.Rule{Name: "outage", Limit: 10, Window: time.Minute}
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name    string
		addr    func(*testing.T) string
		failure quota.Failure
		want    quota.Decision
	}{
		{"closed port, fail closed", unreachable, quota.FailClosed, quota.Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
		{"closed port, fail open", unreachable, quota.FailOpen, quota.Decision{Allowed: true, Remaining: 10, Limit: 10, Window: time.Minute}},
		{"silent server, fail closed", silent, quota.FailClosed, quota.Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
		{"silent server, fail open", silent, quota.FailOpen, quota.Decision{Allowed: true, Remaining: 10, Limit: 10, Window: time.Minute}},
	}
	for _, tt := range tests {
		for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
			for _, batch := range []int{0, 8} {
				t.Run(fmt.Sprintf("%s, %v, Batch %d", tt.name, alg, batch), func(t *testing.T) {
					opt := testredis.Options(t)
					opt.Addr = tt.addr(t)
					c := redis.NewClient(opt)
					t.Cleanup(func() { c.Close() })
					s := newStore(t, c, "outage:", redisquota.Config{Failure: tt.failure, Timeout: timeout, Batch: batch})
					rule := rule
					rule.Algorithm = alg
					start := time.Now()
					got, err := s.Allow(context.Background(), rule, quota.Subject("x"))
					elapsed := time.Since(start)
					if err == nil {
						t.Errorf("got no error, want one")
					}
					if got != tt.want {
						t.Errorf("got %+v, want %+v", got, tt.want)
					}
					// A generous margin: the machine may be busy, but a hang
					// would take the client's own 3s read timeout.
					if elapsed > timeout+time.Second {
						t.Errorf("took %v, want at most Timeout %v", elapsed, timeout)
					}
				})
			}
		}
	}
}

// TestCallerErrors checks this store's own limits on rules, and that no
// caller error reaches Redis; the rest of caller errors is the suite's
// (CallerErrors, SubjectsFromSubjectOnly).
func TestCallerErrors(t *testing.T) {
	a := quota.Subject("alice@example.com")
	ok := quota.Rule{Name: "r", Limit: 5, Window: time.Minute}
	tests := []struct {
		name    string
		rule    quota.Rule
		subject string
		n       int
		wantErr error
	}{
		{"raw email", ok, "alice@example.com", 1, quota.ErrSubject},
		{"raw ip", ok, "203.0.113.7", 1, quota.ErrSubject},
		{"uppercase hex", ok, strings.ToUpper(a), 1, quota.ErrSubject},
		{"empty", ok, "", 1, quota.ErrSubject},
		{"zero limit", quota.Rule{Name: "r", Window: time.Minute}, a, 1, quota.ErrRule},
		{"zero window", quota.Rule{Name: "r", Limit: 5}, a, 1, quota.ErrRule},
		{"negative cost", ok, a, -1, quota.ErrRule},
		{"window below a millisecond", quota.Rule{Name: "r", Limit: 5, Window: 999 * time.Microsecond}, a, 1, quota.ErrRule},
		{"rule name with a hash tag", quota.Rule{Name: "{r}", Limit: 5, Window: time.Minute}, a, 1, quota.ErrRule},
		{"rule name with an opening brace, gcra", quota.Rule{Name: "r{", Limit: 5, Window: time.Minute, Algorithm: quota.TokenBucket}, a, 1, quota.ErrRule},
		{"window past 2^52ns, not whole seconds", quota.Rule{Name: "r", Limit: 5, Window: 1<<52 + 1}, a, 1, quota.ErrRule},
		{"gcra span past 2^53ns", quota.Rule{Name: "r", Limit: 1, Window: 24 * time.Hour, Algorithm: quota.TokenBucket, Burst: 200}, a, 1, quota.ErrRule},
		{"gcra cost past 2^53ns", quota.Rule{Name: "r", Limit: 1, Window: 24 * time.Hour, Algorithm: quota.TokenBucket}, a, 200, quota.ErrRule},
	}
	for _, tt := range tests {
		for _, failure := range []quota.Failure{quota.FailClosed, quota.FailOpen} {
			t.Run(fmt.Sprintf("%s, fail open %v", tt.name, failure == quota.FailOpen), func(t *testing.T) {
				c := testredis.Client(t)
				prefix := testredis.Prefix(t)
				s := newStore(t, c, prefix, redisquota.Config{Failure: failure})
				got, err := s.AllowN(context.Background(), tt.rule, tt.subject, tt.n)
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got error %v, want %v", err, tt.wantErr)
				}
				want := quota.Decision{RetryAfter: tt.rule.Window, Limit: tt.rule.Limit, Window: tt.rule.Window}
				if got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
				if err != nil && strings.Contains(err.Error(), tt.subject) && tt.subject != "" {
					t.Errorf("error %q repeats the raw subject", err)
				}
				if keys, _ := c.Keys(context.Background(), prefix+"*").Result(); len(keys) != 0 {
					t.Errorf("keys written: got %v, want none", keys)
				}
			})
		}
	}
}
