package redisquota_test

import (
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"testing"

	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/internal/testserver/outagetest"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

// TestOutage stops, or pauses, a private Redis under a door's load and
// starts it again, under each of the door's failure policies; see package
// outagetest for what it checks.
func TestOutage(t *testing.T) {
	for _, policy := range []quota.Failure{quota.FailClosed, quota.FailOpen, quota.FailLocal} {
		for _, tc := range []struct {
			name      string
			batch     int
			blackHole bool
		}{{"refused", 0, false}, {"refused, batched", 16, false}, {"black-holed", 0, true}} {
			batch := tc.batch
			t.Run(policy.String()+"/"+tc.name, func(t *testing.T) {
				srv := testserver.Redis(t)
				outagetest.Test{
					Server:    srv,
					Failure:   policy,
					BlackHole: tc.blackHole,
					Timeout:   redisquota.DefaultTimeout,
					// go-redis stops dialling after PoolSize failed dials in
					// a row and probes the server once a second until one
					// succeeds, meanwhile failing calls that need a new
					// connection with the last dial error; the door probes
					// once a second too.
					Recovery: outagetest.MaxRecovery,
					Open: func(t *testing.T, mp metric.MeterProvider) (quota.Charger, func()) {
						c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
						s, err := redisquota.New(c, redisquota.Config{
							Failure:       policy,
							Batch:         batch,
							MeterProvider: mp,
						})
						if err != nil {
							c.Close()
							t.Fatal(err)
						}
						return s, func() {
							s.Close()
							c.Close()
						}
					},
				}.Run(t)
			})
		}
	}
}
