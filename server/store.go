package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/asyncquota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/internal/store"
)

// sharedStore is an open shared quota store, with the async chargers the
// groups of the async mode decide on.
type sharedStore struct {
	*store.Shared
	mp metric.MeterProvider

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
	r, ok := s.Charger.(quota.Reconciler)
	if !ok {
		return s.Charger
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.asyncs[interval]; ok {
		return c
	}
	c, err := asyncquota.New(r, asyncquota.Config{Interval: interval, MeterProvider: s.mp})
	if err != nil { // the file's sync_interval is positive, which New takes
		return s.Charger
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
	s.Close()
}

// openStore opens the store cfg names (package store), or returns nil for
// the memory store, whose decisions the door makes in its own buckets.
func openStore(ctx context.Context, cfg config.Config, mp metric.MeterProvider, log *slog.Logger) (*sharedStore, error) {
	st, err := store.Open(ctx, store.Config{
		Front: "admit", Store: cfg.Store, Table: cfg.StoreTable, Prefix: cfg.StorePrefix,
		Failure: cfg.StoreFail, Migrate: cfg.StoreMigrate, MeterProvider: mp, Logger: log,
	})
	if st == nil || err != nil {
		return nil, err
	}
	return &sharedStore{Shared: st, mp: mp}, nil
}
