package bench

import (
	"context"
	"net/http"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
)

// admitLink is admit's link group with its caps raised: per-client buckets of
// Ample or Tight size in the door's bounded table (16,384 clients), in-flight
// caps high enough that parallel runs never meet them.
var admitLink = Peer{
	Name:    "admit-link",
	Module:  "github.com/admitgo/admit",
	Setup:   "link group: Rate and Burst (and the shared bucket) set to the case's budget, PerClient and Inflight 1,024, MaxClients 16,384; key: the TCP peer (the zero Config.Key); metrics recorded by the OpenTelemetry SDK; no policy headers",
	Rejects: true,
	Bounded: true,
	New: func(next http.Handler, l Limit) (http.Handler, func(), error) {
		b := admit.DefaultBudgets()[admit.GroupLink]
		b.Rate, b.Burst = ampleRate, ampleBurst
		if l == Tight {
			b.Rate, b.Burst = rate.Every(tightPeriod), 1
		}
		b.SharedRate, b.SharedBurst = b.Rate, b.Burst
		b.PerClient, b.Inflight = 1024, 1024
		return newDoor(admit.GroupLink, b, next)
	},
}

// admitWebhook is admit's webhook group at its defaults: 50/s and a burst of
// 500, charged only when the handler answers 4xx, so the trivial handler's
// 200s are never limited.
var admitWebhook = Peer{
	Name:    "admit-webhook",
	Module:  "github.com/admitgo/admit",
	Setup:   "webhook group at DefaultBudgets (50/s, burst 500, charged on 4xx answers only, PerClient 16, Inflight 64, 10 s read deadline, 1 MiB body cap, MaxClients 16,384); key: the TCP peer; metrics recorded by the OpenTelemetry SDK; sits out the rejecting case",
	Bounded: true,
	New: func(next http.Handler, _ Limit) (http.Handler, func(), error) {
		return newDoor(admit.GroupWebhook, admit.DefaultBudgets()[admit.GroupWebhook], next)
	},
}

// newDoor wraps next in a door with budget b for group g, its metrics
// recorded by a real SDK as a service would.
func newDoor(g admit.Group, b admit.Budget, next http.Handler) (http.Handler, func(), error) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	d, err := admit.New(admit.Config{
		Budgets:       map[admit.Group]admit.Budget{g: b},
		MeterProvider: mp,
	})
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		_ = d.Close()
		_ = mp.Shutdown(context.Background())
	}
	return d.Wrap(g, next, nil), stop, nil
}
