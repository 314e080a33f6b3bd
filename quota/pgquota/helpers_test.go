package pgquota_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

// t0 is aligned to every window the tests use.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newClock returns a settable clock for Config.Now.
func newClock(t time.Time) *testclock.Clock { return testclock.New(t) }

// generous is a Timeout for tests that run many calls on a loaded machine and
// must not fail closed by accident.
const generous = 30 * time.Second

// newStore returns a store on pool with its table migrated.
func newStore(t *testing.T, pool *pgxpool.Pool, cfg pgquota.Config) *pgquota.Store {
	t.Helper()
	s, err := pgquota.New(pool, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

func allowN(t *testing.T, s quota.Charger, rule quota.Rule, subject string, n int) quota.Decision {
	t.Helper()
	d, err := s.AllowN(context.Background(), rule, subject, n)
	if err != nil {
		t.Fatalf("AllowN(%q, n=%d): %v", rule.Name, n, err)
	}
	return d
}

// rows counts the rows of the default table in the test's schema.
func rows(t *testing.T, pool *pgxpool.Pool, where string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM admit_quota WHERE "+where).Scan(&n); err != nil {
		t.Fatalf("count rows: %v", err)
	}
	return n
}

// meter returns a meter provider and a function that reads
// admit.quota.decisions by outcome and the number of latency samples.
func meter(t *testing.T) (*sdkmetric.MeterProvider, func() (map[string]int64, int64)) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	return mp, func() (map[string]int64, int64) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatalf("collect metrics: %v", err)
		}
		decisions := map[string]int64{}
		var latencies int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch data := m.Data.(type) {
				case metricdata.Sum[int64]:
					for _, dp := range data.DataPoints {
						store, _ := dp.Attributes.Value("admit.quota.store")
						outcome, _ := dp.Attributes.Value("admit.quota.outcome")
						decisions[store.AsString()+"/"+outcome.AsString()] += dp.Value
					}
				case metricdata.Histogram[float64]:
					for _, dp := range data.DataPoints {
						latencies += int64(dp.Count)
					}
				}
			}
		}
		return decisions, latencies
	}
}

func sameCounts(got, want map[string]int64) bool { return fmt.Sprint(got) == fmt.Sprint(want) }

// deleteCounter counts the DELETE statements a pool sends.
type deleteCounter struct{ n atomic.Int64 }

func (c *deleteCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(data.SQL, "DELETE") {
		c.n.Add(1)
	}
	return ctx
}

func (c *deleteCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// unreachable returns a pool for a port on which nothing listens.
func unreachable(t *testing.T) *pgxpool.Pool {
	t.Helper()
	addr := closedAddr(t)
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+addr+"/test?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
