package store

import (
	"context"
	"time"

	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

func openPostgres(ctx context.Context, cfg Config) (*Shared, error) {
	pool, err := storeurl.Pool(ctx, cfg.Store.URL)
	if err != nil {
		return nil, config.UsageError{Err: config.StoreURLError(cfg.Front, cfg.from(), cfg.Store.URL, err)}
	}
	st, err := pgquota.New(pool, pgquota.Config{
		Table: cfg.Table, Failure: cfg.Failure, MeterProvider: cfg.MeterProvider, Logger: cfg.Logger, Batch: postgresBatch,
	})
	if err != nil {
		pool.Close()
		return nil, usage(cfg, "store-table", cfg.Table, err)
	}
	s := &Shared{Charger: st, close: func() { st.Close(); pool.Close() }}
	if cfg.Counter {
		c, err := pgquota.NewCounter(pool, pgquota.CounterConfig{Table: cfg.Table, Batch: postgresBatch})
		if err != nil {
			s.close()
			return nil, usage(cfg, "store-table", cfg.Table, err)
		}
		s.Counter = c
		s.close = func() { c.Close(); st.Close(); pool.Close() }
	}
	migrated := !cfg.Migrate
	if cfg.Migrate {
		migrated = migrateAtStart(ctx, st, cfg)
	} else {
		pctx, cancel := context.WithTimeout(ctx, startupProbe)
		if err := pool.Ping(pctx); err != nil {
			cfg.Logger.Warn(cfg.Front+": the store does not answer; starting anyway, its failure policy decides", "store", cfg.from(), "err", err)
		}
		cancel()
	}
	s.maintain = func(ctx context.Context) {
		if !migrated && !migrate(ctx, st, cfg) {
			return
		}
		st.SweepEvery(ctx, 0, 0)
	}
	return s, nil
}

// migrateAtStart tries once, within startupProbe, to create the table, and
// reports whether it did; when not, it logs that the front starts anyway
// and migrate goes on trying in the background.
func migrateAtStart(ctx context.Context, st *pgquota.Store, cfg Config) bool {
	pctx, cancel := context.WithTimeout(ctx, startupProbe)
	defer cancel()
	if err := st.Migrate(pctx); err != nil {
		cfg.Logger.Warn(cfg.Front+": cannot create the store's table yet; starting anyway and retrying in the background",
			"table", tableName(cfg.Table), "err", err)
		return false
	}
	return true
}

// migrate creates the table, trying every migrateRetry until it works or ctx
// ends, and reports whether it worked.
func migrate(ctx context.Context, st *pgquota.Store, cfg Config) bool {
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
			cfg.Logger.Info(cfg.Front+": created the store's table", "table", tableName(cfg.Table))
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
