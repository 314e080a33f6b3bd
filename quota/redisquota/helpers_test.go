package redisquota_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

// t0 has nanoseconds below the microsecond, so any rounding on the way to
// Redis and back shows.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.UTC)

// newClock returns a settable clock for Config.Now.
func newClock(t time.Time) *testclock.Clock { return testclock.New(t) }

// newStore returns a store on c under prefix with cfg's other fields.
func newStore(t *testing.T, c redisquota.Client, prefix string, cfg redisquota.Config) *redisquota.Store {
	t.Helper()
	cfg.Prefix = prefix
	s, err := redisquota.New(c, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testStore returns a store on its own prefix, the client behind it, and the
// prefix, with the clock clk.
func testStore(t *testing.T, clk *testclock.Clock) (*redisquota.Store, *redis.Client, string) {
	t.Helper()
	c := testredis.Client(t)
	prefix := testredis.Prefix(t)
	return newStore(t, c, prefix, redisquota.Config{Now: clk.Now}), c, prefix
}

// decide calls AllowN and fails the test on an error.
func decide(t *testing.T, s *redisquota.Store, rule quota.Rule, subject string, n int) quota.Decision {
	t.Helper()
	d, err := s.AllowN(context.Background(), rule, subject, n)
	if err != nil {
		t.Fatalf("AllowN(%q, n=%d): %v", rule.Name, n, err)
	}
	return d
}

// fixedKey is the key of subject's fixed-window bucket of the rule named
// name.
func fixedKey(prefix, name, subject string) string {
	return prefix + name + ":{" + subject + "}:fixed"
}

// gcraKey is the key of subject's GCRA bucket of the rule named name.
func gcraKey(prefix, name, subject string) string {
	return prefix + name + ":{" + subject + "}:gcra"
}

// hashTag returns what Redis Cluster hashes of key to find its slot: the
// text between the first "{" and the first "}" after it, if not empty, or
// else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}
