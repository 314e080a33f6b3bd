package config

import (
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/server/internal/servertls"
	"github.com/admitgo/admit/server/storeurl"
)

// CheckOffline runs the checks of startup that need no network: that the
// certificate loads, that the store's URL and table or prefix are ones its
// driver takes, and that the routes fit together with the gRPC health
// service, folded as the server folds them. Its errors are the
// configuration's, so the process exits 2 on them.
func (c Config) CheckOffline() error {
	if c.TLSCert != "" {
		if _, err := servertls.Load("admit", c.TLSCert, c.TLSKey); err != nil {
			return err
		}
	}
	if err := c.Store.Check(); err != nil {
		return StoreURLError("admit", "--store", c.Store.URL, err)
	}
	if c.Store.Kind == storeurl.Postgres {
		if _, err := pgquota.Schema(c.StoreTable); err != nil {
			return fmt.Errorf("admit: --store-table %q: %w", c.StoreTable, err)
		}
	}
	_, err := c.RouteTable(c.ServedRoutes())
	return err
}

// CheckKeyPair refuses a front's --tls-cert without its --tls-key, or the
// key without the certificate, naming the flag or variable given and the
// one missing.
func CheckKeyPair[T Target](set *OptionSetFor[T], cert, key string) error {
	if (cert == "") == (key == "") {
		return nil
	}
	given, missing := "tls-cert", "tls-key"
	if cert == "" {
		given, missing = missing, given
	}
	from, _ := set.From(given)
	return fmt.Errorf("%s: %s is set but --%s (%s) is not: give both or neither", frontOf[T](), from, missing, EnvNameOf[T](missing))
}

// OfflineStore returns the store --store names, built as startup builds it
// but unable to reach its server, for the checks a store makes of its rules
// before any call; nil for the memory store. Validate must never connect:
// it runs where the store may be unreachable, or must not be touched.
func (c Config) OfflineStore() (quota.Charger, func(), error) {
	quiet := slog.New(slog.DiscardHandler)
	switch c.Store.Kind {
	case storeurl.Redis:
		st, err := redisquota.New(storeurl.Offline{}, redisquota.Config{Prefix: c.StorePrefix, MeterProvider: noop.NewMeterProvider()})
		if err != nil {
			return nil, nil, fmt.Errorf("admit: --store-prefix %q: %w", c.StorePrefix, err)
		}
		return st, func() { st.Close() }, nil
	case storeurl.Postgres:
		pool, err := storeurl.OfflinePool(c.Store.URL)
		if err != nil {
			return nil, nil, StoreURLError("admit", "--store", c.Store.URL, err)
		}
		st, err := pgquota.New(pool, pgquota.Config{Table: c.StoreTable, MeterProvider: noop.NewMeterProvider(), Logger: quiet})
		if err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("admit: --store-table %q: %w", c.StoreTable, err)
		}
		return st, func() { st.Close(); pool.Close() }, nil
	}
	return nil, func() {}, nil
}

// StoreURLError names a store URL its driver refuses, without its
// password, in the words of front ("admit", "admit rls") and of from, the
// flag or variables it came from; storeurl's errors never repeat the URL.
func StoreURLError(front, from, u string, err error) error {
	return fmt.Errorf("%s: %s %q: %w", front, from, storeurl.Redact(u), err)
}
