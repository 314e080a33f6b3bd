package store

import (
	"github.com/admitgo/admit/quota/memcachequota"
	"github.com/admitgo/admit/server/internal/config"
	"github.com/admitgo/admit/server/storeurl"
)

// openMemcache opens a memcached counter, for admit rls alone (the
// proxy's --store refuses memcache://): its Charger is
// memcachequota.NoBuckets, which refuses every token bucket, beside the
// Counter Config.Counter asks for. It connects on the first call: memcached has no
// password or database a probe could find wrong.
func openMemcache(cfg Config) (*Shared, error) {
	m, err := storeurl.ParseMemcache(cfg.Store.URL)
	if err != nil {
		return nil, config.UsageError{Err: config.StoreURLError(cfg.Front, cfg.from(), cfg.Store.URL, err)}
	}
	s := &Shared{Charger: memcachequota.NoBuckets{}, close: func() {}}
	if cfg.Counter {
		c, err := memcachequota.NewCounter(memcachequota.CounterConfig{Servers: m.Servers, MaxIdleConns: m.MaxIdleConns, Prefix: cfg.Prefix})
		if err != nil {
			return nil, usage(cfg, "store-prefix", cfg.Prefix, err)
		}
		s.Counter, s.close = c, func() { c.Close() }
	}
	return s, nil
}
