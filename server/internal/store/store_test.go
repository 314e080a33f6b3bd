package store_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/store"
	"github.com/admitgo/admit/server/storeurl"
)

func open(t *testing.T, cfg store.Config) *store.Shared {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	st, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		t.Fatalf("%s: got no store", cfg.Store.Kind)
	}
	stop := st.Maintain()
	t.Cleanup(func() { stop(); st.Close() })
	return st
}

func parse(t *testing.T, raw string) storeurl.Store {
	t.Helper()
	s, err := storeurl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenMemory opens nothing: the front decides in its own memory.
func TestOpenMemory(t *testing.T) {
	st, err := store.Open(context.Background(), store.Config{Front: "admit", Store: parse(t, "memory")})
	if st != nil || err != nil {
		t.Fatalf("memory: got %v, %v; want nil, nil", st, err)
	}
}

// TestOpenCounts opens the quota store and, when asked, a counter on the
// same connections, on each shared store.
func TestOpenCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) store.Config
	}{
		{"redis", func(t *testing.T) store.Config {
			return store.Config{Store: parse(t, testredis.URL()), Prefix: testredis.Prefix(t)}
		}},
		{"postgres", func(t *testing.T) store.Config {
			return store.Config{Store: parse(t, testpg.URL()), Table: testpg.New(t).Schema + ".admit_quota", Migrate: true}
		}},
		{"memcache", func(t *testing.T) store.Config {
			return store.Config{Store: parse(t, testserver.Memcached(t).URL)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg(t)
			cfg.Front = "admit rls"
			if st := open(t, cfg); st.Charger == nil || st.Counter != nil {
				t.Fatalf("without Counter: got charger %v, counter %v; want a charger alone", st.Charger, st.Counter)
			}
			cfg.Counter = true
			st := open(t, cfg)
			hits := []quota.Hit{{Key: "k", Window: time.Hour, N: 2}}
			if _, err := st.Counter.Count(context.Background(), hits); err != nil || hits[0].Count != 2 {
				t.Fatalf("Count: %v, count %d; want 2", err, hits[0].Count)
			}
		})
	}
}

// TestOpenRefused: a Redis that refuses the connection stops startup with
// a usage error in the front's words; a malformed prefix names its flag.
func TestOpenRefused(t *testing.T) {
	u, err := url.Parse(testredis.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/4000"
	for _, tc := range []struct {
		cfg  store.Config
		want string
	}{
		{store.Config{Front: "admit rls", Store: parse(t, u.String())}, `admit rls: --store "`},
		{store.Config{Front: "admit", Store: parse(t, testredis.URL()), Prefix: "a{b"}, `admit: --store-prefix "a{b"`},
	} {
		tc.cfg.Logger = slog.New(slog.DiscardHandler)
		_, err := store.Open(context.Background(), tc.cfg)
		var uerr config.UsageError
		if !errors.As(err, &uerr) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("got %v, want a usage error starting %q", err, tc.want)
		}
	}
}
