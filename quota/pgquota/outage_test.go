package pgquota_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/internal/testserver/outagetest"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

// TestOutage stops, or pauses, a private PostgreSQL under a door's load
// and starts it again, under each of the door's failure policies; see
// package outagetest for what it checks.
func TestOutage(t *testing.T) {
	for _, policy := range []quota.Failure{quota.FailClosed, quota.FailOpen, quota.FailLocal} {
		for _, blackHole := range []bool{false, true} {
			name := policy.String() + "/refused"
			if blackHole {
				name = policy.String() + "/black-holed"
			}
			t.Run(name, func(t *testing.T) {
				srv := testserver.Postgres(t)
				outagetest.Test{
					Server:    srv,
					Failure:   policy,
					BlackHole: blackHole,
					Timeout:   pgquota.DefaultTimeout,
					// The door probes the store twice a second.
					Recovery: outagetest.MaxRecovery,
					Open: func(t *testing.T, mp metric.MeterProvider) (quota.Charger, func()) {
						cfg, err := pgxpool.ParseConfig(srv.URL)
						if err != nil {
							t.Fatal(err)
						}
						// A down server refuses at once; the bound is for one
						// that accepts and never answers, so that no dial
						// outlives the test by much.
						cfg.ConnConfig.ConnectTimeout = time.Second
						cfg.MaxConns = 8
						pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
						if err != nil {
							t.Fatal(err)
						}
						s, err := pgquota.New(pool, pgquota.Config{Failure: policy, MeterProvider: mp})
						if err == nil {
							err = s.Migrate(context.Background())
						}
						if err != nil {
							pool.Close()
							t.Fatal(err)
						}
						return s, pool.Close
					},
				}.Run(t)
			})
		}
	}
}
