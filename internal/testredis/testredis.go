// Package testredis connects tests to the Redis server the store tests run
// against, and keeps each test's keys apart from every other test's.
//
// The server is named by the ADMIT_TEST_REDIS environment variable, a Redis URL
// (redis://[user:password@]host:port/db); when it is unset the tests use
// redis://127.0.0.1:6379/0. A server that does not answer fails the test: it is
// never skipped, so a missing server cannot pass a run by accident. Run
// scripts/services to start the local one.
//
// Tests share one server and may run in parallel with other packages' tests,
// so each test takes its own key [Prefix] and writes only under it; the prefix's
// keys are deleted when the test ends.
//
//	c := testredis.Client(t)
//	prefix := testredis.Prefix(t)
//	store, err := redisquota.New(c, redisquota.Config{Prefix: prefix})
package testredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/internal/testneed"
)

// EnvURL names the environment variable that overrides [DefaultURL].
const EnvURL = "ADMIT_TEST_REDIS"

// DefaultURL is the server the tests use when [EnvURL] is unset.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL returns the URL of the test server: $ADMIT_TEST_REDIS, or [DefaultURL].
func URL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// Options returns client options for the test server, set up as admit's
// stores want their clients: commands are never retried (a retried increment
// could count twice) and context deadlines bound every call. The test fails if
// the URL does not parse.
func Options(t testing.TB) *redis.Options {
	t.Helper()
	opt, err := redis.ParseURL(URL())
	if err != nil {
		t.Fatalf("testredis: %s %s: %v", EnvURL, redacted(URL()), err)
	}
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	return opt
}

// Client returns a new client for the test server, closed when the test ends.
// Each call returns a separate client with its own connection pool, so a test
// can play several replicas. The test fails, telling to run scripts/services,
// when the server does not answer.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	return ClientWith(t, Options(t))
}

// ClientWith is [Client] with options the caller adjusted (a pool size, say).
func ClientWith(t testing.TB, opt *redis.Options) *redis.Client {
	t.Helper()
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		testneed.Missing(t, "testredis: Redis at %s does not answer (%v): run scripts/services to start it, or set %s", redacted(URL()), err, EnvURL)
	}
	return c
}

// Prefix returns a key prefix no other test uses, built from the test's name
// and random characters and ending in ":". When the test ends, every key that
// starts with it is deleted (SCAN, then UNLINK in batches), so tests can leave
// keys behind without leaking them into the next run.
func Prefix(t testing.TB) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("testredis: %v", err)
	}
	prefix := "admit-test:" + sanitize(t.Name()) + ":" + hex.EncodeToString(b[:]) + ":"
	c := Client(t) // registered first, so closed after the sweep below
	t.Cleanup(func() {
		if err := Delete(context.Background(), c, prefix); err != nil {
			t.Errorf("testredis: deleting keys under %q: %v", prefix, err)
		}
	})
	return prefix
}

// Delete removes every key that starts with prefix. The prefix must not hold
// glob characters (*, ?, [, ], \); [Prefix] never does.
func Delete(ctx context.Context, c redis.UniversalClient, prefix string) error {
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	batch := make([]string, 0, 1000)
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			if err := c.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return c.Unlink(ctx, batch...).Err()
	}
	return nil
}

// sanitize keeps a test name usable in a SCAN pattern and readable in
// redis-cli: letters, digits, '-' and '_'; anything else becomes '_'.
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
}

// redacted hides a password in a Redis URL before it reaches a test log.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
