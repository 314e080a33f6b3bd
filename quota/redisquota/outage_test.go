package redisquota_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/admitgo/admit/internal/testserver"
	"github.com/admitgo/admit/internal/testserver/outagetest"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/redisquota"
)

// TestOutage stops a private Redis under a door's load and starts it again;
// see package outagetest for what it checks.
func TestOutage(t *testing.T) {
	for _, policy := range []quota.Policy{quota.FailClosed, quota.FailOpen} {
		for _, batch := range []int{0, 16} {
			name := map[quota.Policy]string{quota.FailClosed: "fail closed", quota.FailOpen: "fail open"}[policy]
			if batch > 0 {
				name += ", batched"
			}
			t.Run(name, func(t *testing.T) {
				srv := testserver.Redis(t)
				outagetest.Test{
					Server:  srv,
					Failure: policy,
					Timeout: redisquota.DefaultTimeout,
					// go-redis stops dialling after PoolSize failed dials in
					// a row and probes the server once a second until one
					// succeeds; meanwhile calls that need a new connection
					// fail with the last dial error.
					Recovery: 1500 * time.Millisecond,
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
