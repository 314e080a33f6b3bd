package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// startupProbe bounds what startup waits for a shared store: creating the
// PostgreSQL table, or a Redis ping. A store that does not answer in time is
// logged and used anyway; its failure policy decides until it is back.
const startupProbe = 3 * time.Second

// migrateRetry is how often the PostgreSQL table is tried again when startup
// could not create it.
const migrateRetry = 10 * time.Second

// redisBatch is how many concurrent decisions the Redis store sends in one
// pipeline. A front under load has many calls deciding at once; measured
// on one Redis, batching multiplied decisions per second 4 to 6 times at 256
// concurrent callers, for a goroutine handoff on a lone call.
const redisBatch = 64

// postgresBatch is how many concurrent decisions the PostgreSQL store sends
// in one round trip and one commit; calls on one bucket in it become one row
// update. See docs/performance.md for what it buys.
const postgresBatch = 64

// Config is what a front opens its store with.
type Config struct {
	Front   string // starts the errors and log lines: "admit", "admit rls"
	From    string // the flag or variables that named Store, for errors; empty: --store
	Store   storeurl.Store
	Table   string        // the PostgreSQL table, maybe schema-qualified; empty: pgquota's default
	Prefix  string        // the start of every Redis key; empty: redisquota's default
	Failure quota.Failure // the quota store's failure policy; zero: its default
	Migrate bool          // create the PostgreSQL table when it is missing
	// Counter asks for a fixed-window counter on the same connections
	// and, in PostgreSQL, the same table, beside the quota store.
	Counter       bool
	MeterProvider metric.MeterProvider
	Logger        *slog.Logger
}

// Shared is an open shared store. Its fields do not change once opened.
type Shared struct {
	Charger  quota.Charger
	Counter  quota.Counter             // nil unless Config.Counter
	maintain func(ctx context.Context) // nil: no upkeep
	close    func()
}

// Open opens the store cfg names, or returns nil for the memory store.
// Its upkeep runs only once the front starts it with Maintain.
func Open(ctx context.Context, cfg Config) (*Shared, error) {
	switch cfg.Store.Kind {
	case storeurl.Postgres:
		return openPostgres(ctx, cfg)
	case storeurl.Redis:
		return openRedis(ctx, cfg)
	case storeurl.Memcache:
		return openMemcache(cfg)
	}
	return nil, nil
}

// Maintain starts the store's upkeep in the background: for PostgreSQL,
// creating the table when startup could not, then sweeping expired rows.
// stop ends it and returns once it has.
func (s *Shared) Maintain() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if s.maintain != nil {
			s.maintain(ctx)
		}
	}()
	return func() { cancel(); <-done }
}

// Close closes the store and its connections, once Maintain's upkeep has
// stopped.
func (s *Shared) Close() { s.close() }

// from names where the store came from in errors: From, or --store.
func (c Config) from() string {
	if c.From == "" {
		return "--store"
	}
	return c.From
}

// usage is a refusal of the configuration, naming flag and its value.
func usage(cfg Config, flag, value string, err error) error {
	return config.UsageError{Err: fmt.Errorf("%s: --%s %q: %w", cfg.Front, flag, value, err)}
}
