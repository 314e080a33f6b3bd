package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

func openRedis(ctx context.Context, cfg Config) (*Shared, error) {
	stopLog := useRedisLog(cfg.Logger)
	client, err := storeurl.RedisClient(cfg.Store.URL)
	if err != nil {
		stopLog()
		return nil, config.UsageError{Err: config.StoreURLError(cfg.Front, cfg.from(), cfg.Store.URL, err)}
	}
	st, err := redisquota.New(client, redisquota.Config{
		Prefix: cfg.Prefix, Failure: cfg.Failure, MeterProvider: cfg.MeterProvider, Batch: redisBatch,
		OneServer: cfg.Store.OneServer(),
	})
	if err != nil {
		client.Close()
		stopLog()
		return nil, usage(cfg, "store-prefix", cfg.Prefix, err)
	}
	s := &Shared{Charger: st, close: func() { st.Close(); client.Close(); stopLog() }}
	if cfg.Counter {
		c, err := redisquota.NewCounter(client, redisquota.CounterConfig{Prefix: cfg.Prefix, Batch: redisBatch})
		if err != nil {
			s.close()
			return nil, usage(cfg, "store-prefix", cfg.Prefix, err)
		}
		s.Counter = c
		s.close = func() { c.Close(); st.Close(); client.Close(); stopLog() }
	}
	if err := probeRedis(ctx, client, cfg); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// probeRedis pings a store's Redis at startup: one that answers with an
// error (a wrong password or database number, which waiting will not mend)
// stops startup with a usage error; one that does not answer is logged,
// and --store-fail decides until it does.
func probeRedis(ctx context.Context, client redis.UniversalClient, cfg Config) error {
	pctx, cancel := context.WithTimeout(ctx, startupProbe)
	defer cancel()
	err := client.Ping(pctx).Err()
	switch {
	case err == nil:
	case storeurl.Refused(err):
		return config.UsageError{Err: fmt.Errorf("%s: %s %q: Redis refuses the connection: %w", cfg.Front, cfg.from(), storeurl.Redact(cfg.Store.URL), err)}
	default:
		cfg.Logger.Warn(cfg.Front+": the store does not answer; starting anyway, --store-fail decides", "store", cfg.from(), "err", err)
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

// go-redis logs through one process-wide logger, so the front's log is
// kept where redisLogger finds it, and dropped when its store closes.
var (
	redisLogs sync.Once
	redisLog  atomic.Pointer[slog.Logger]
)

// redisLogger sends go-redis's own messages (failed dials, a cluster's slot
// map reloads, sentinel switches) to the front's log at Warn, instead of
// to stderr in another format.
type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLog.Load(); l != nil {
		l.WarnContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
	}
}
