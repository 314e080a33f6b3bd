package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/asyncquota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
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
// pipeline. A proxy under load has many requests deciding at once; measured
// on one Redis, batching multiplied decisions per second 4 to 6 times at 256
// concurrent callers, for a goroutine handoff on a lone call.
const redisBatch = 64

// postgresBatch is how many concurrent decisions the PostgreSQL store sends
// in one round trip and one commit; calls on one bucket in it become one row
// update. See docs/performance.md for what it buys.
const postgresBatch = 64

// sharedStore is an open shared quota store.
type sharedStore struct {
	charger  quota.Charger
	maintain func(ctx context.Context) // runs until ctx ends; nil: nothing to do
	closeFn  func()
	mp       metric.MeterProvider

	mu     sync.Mutex // guards asyncs
	asyncs map[time.Duration]*asyncquota.Charger
	runCtx context.Context    // the async chargers' Run; nil until the first
	stop   context.CancelFunc // ends runCtx
	runs   sync.WaitGroup     // their Runs, each ending with a last reconcile
}

// async returns the store in the async mode at interval, one per interval
// for every group that asks for it (their keys hold the rule's name), its
// reconciles running until close.
func (s *sharedStore) async(interval time.Duration) quota.Charger {
	r, ok := s.charger.(quota.Reconciler)
	if !ok {
		return s.charger
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.asyncs[interval]; ok {
		return c
	}
	c, err := asyncquota.New(r, asyncquota.Config{Interval: interval, MeterProvider: s.mp})
	if err != nil { // the file's sync_interval is positive, which New takes
		return s.charger
	}
	if s.asyncs == nil {
		var ctx context.Context
		ctx, s.stop = context.WithCancel(context.Background())
		s.asyncs = make(map[time.Duration]*asyncquota.Charger)
		s.runCtx = ctx
	}
	s.asyncs[interval] = c
	s.runs.Go(func() { c.Run(s.runCtx) })
	return c
}

// close ends the async chargers' reconciles, each with a last one, then
// closes the store.
func (s *sharedStore) close() {
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
		s.runs.Wait()
	}
	s.closeFn()
}

// openStore opens the store cfg names, or returns nil for the memory store,
// whose decisions the door makes in its own buckets. It never fails because
// the store is unreachable, only because the configuration is wrong.
func openStore(ctx context.Context, cfg config.Config, mp metric.MeterProvider, log *slog.Logger) (*sharedStore, error) {
	switch cfg.Store.Kind {
	case storeurl.Postgres:
		return openPostgres(ctx, cfg, mp, log)
	case storeurl.Redis:
		return openRedis(ctx, cfg, mp, log)
	}
	return nil, nil
}

func openPostgres(ctx context.Context, cfg config.Config, mp metric.MeterProvider, log *slog.Logger) (*sharedStore, error) {
	pool, err := storeurl.Pool(ctx, cfg.Store.URL)
	if err != nil {
		return nil, usageError{Err: config.StoreURLError(cfg.Store.URL, err)}
	}
	st, err := pgquota.New(pool, pgquota.Config{
		Table: cfg.StoreTable, Failure: cfg.StoreFail, MeterProvider: mp, Logger: log, Batch: postgresBatch,
	})
	if err != nil {
		pool.Close()
		return nil, usageError{Err: fmt.Errorf("admit: --store-table %q: %w", cfg.StoreTable, err)}
	}
	migrated := !cfg.StoreMigrate
	if !migrated {
		migrated = migrateAtStart(ctx, st, cfg.StoreTable, "admit", log)
	} else {
		pctx, cancel := context.WithTimeout(ctx, startupProbe)
		if err := pool.Ping(pctx); err != nil {
			log.Warn("admit: the store does not answer; starting anyway, its failure policy decides", "err", err)
		}
		cancel()
	}
	maintain := func(ctx context.Context) {
		if !migrated && !migrate(ctx, st, log) {
			return
		}
		st.SweepEvery(ctx, 0, 0)
	}
	return &sharedStore{charger: st, maintain: maintain, mp: mp, closeFn: func() {
		st.Close()
		pool.Close()
	}}, nil
}

// migrateAtStart tries once, within startupProbe, to create the table, and
// reports whether it did; when not, it logs that the server starts anyway
// and migrate goes on trying in the background. who starts the message.
func migrateAtStart(ctx context.Context, st *pgquota.Store, table, who string, log *slog.Logger) bool {
	pctx, cancel := context.WithTimeout(ctx, startupProbe)
	defer cancel()
	if err := st.Migrate(pctx); err != nil {
		log.Warn(who+": cannot create the store's table yet; starting anyway and retrying in the background",
			"table", tableName(table), "err", err)
		return false
	}
	return true
}

// migrate creates the table, trying every migrateRetry until it works or ctx
// ends, and reports whether it worked.
func migrate(ctx context.Context, st *pgquota.Store, log *slog.Logger) bool {
	tick := time.NewTicker(migrateRetry)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, startupProbe)
		err := st.Migrate(pctx)
		cancel()
		if err == nil {
			log.Info("admit: created the store's table")
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

func tableName(t string) string {
	if t == "" {
		return pgquota.DefaultTable
	}
	return t
}

func openRedis(ctx context.Context, cfg config.Config, mp metric.MeterProvider, log *slog.Logger) (*sharedStore, error) {
	stopLog := useRedisLog(log)
	client, err := storeurl.RedisClient(cfg.Store.URL)
	if err != nil {
		return nil, usageError{Err: config.StoreURLError(cfg.Store.URL, err)}
	}
	st, err := redisquota.New(client, redisquota.Config{
		Prefix: cfg.StorePrefix, Failure: cfg.StoreFail, MeterProvider: mp, Batch: redisBatch,
		OneServer: cfg.Store.OneServer(),
	})
	if err != nil {
		client.Close()
		return nil, usageError{Err: fmt.Errorf("admit: --store-prefix %q: %w", cfg.StorePrefix, err)}
	}
	if err := probeRedis(ctx, client, cfg.Store.URL, "admit", log); err != nil {
		st.Close()
		client.Close()
		return nil, err
	}
	return &sharedStore{charger: st, mp: mp, closeFn: func() {
		st.Close()
		client.Close()
		stopLog()
	}}, nil
}

// probeRedis pings a store's Redis at startup: one that answers with an
// error (a wrong password or database number, which waiting will not mend)
// stops startup with a usage error; one that does not answer is logged,
// and --store-fail decides until it does. who starts the messages.
func probeRedis(ctx context.Context, client redis.UniversalClient, url, who string, log *slog.Logger) error {
	pctx, cancel := context.WithTimeout(ctx, startupProbe)
	defer cancel()
	err := client.Ping(pctx).Err()
	switch {
	case err == nil:
	case storeurl.Refused(err):
		return usageError{Err: fmt.Errorf("%s: --store %q: Redis refuses the connection: %w", who, storeurl.Redact(url), err)}
	default:
		log.Warn(who+": the store does not answer; starting anyway, --store-fail decides", "err", err)
	}
	return nil
}

// useRedisLog sends go-redis's own messages to log (see redisLogger), and
// returns what stops it, for when the store closes.
func useRedisLog(log *slog.Logger) (stop func()) {
	redisLogs.Do(func() { redis.SetLogger(redisLogger{}) })
	redisLog.Store(log)
	return func() { redisLog.CompareAndSwap(log, nil) } // the client's goroutines may outlive it
}

// go-redis logs through one process-wide logger, so the server's log is
// kept where redisLogger finds it, and dropped when its store closes.
var (
	redisLogs sync.Once
	redisLog  atomic.Pointer[slog.Logger]
)

// redisLogger sends go-redis's own messages (failed dials, a cluster's slot
// map reloads, sentinel switches) to the server's log at Warn, instead of
// to stderr in another format.
type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLog.Load(); l != nil {
		l.WarnContext(ctx, "admit: redis client: "+fmt.Sprintf(format, v...))
	}
}
