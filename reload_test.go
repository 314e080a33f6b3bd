package admit

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/admitgo/admit/quota"
)

// reload returns d.Reload(cfg) on d's clock, failing the test on an error.
func reload(t *testing.T, d *Door, cfg Config) *Door {
	t.Helper()
	nd, err := d.Reload(cfg)
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	return nd
}

func TestReloadKeepsUnchangedGroups(t *testing.T) {
	const peer = "192.0.2.1:1000"
	burst := defaults[GroupLink].Burst
	d := newDoor(t, newClock(), Config{})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range burst - 5 {
		allowed(t, h, peer, http.StatusOK)
	}

	nd := reload(t, d, Config{})
	if nd.groups[GroupLink] != d.groups[GroupLink] {
		t.Fatal("the link group was rebuilt; want it taken over")
	}
	nh := nd.Wrap(GroupLink, status(http.StatusOK), nil)
	for range 5 {
		allowed(t, nh, peer, http.StatusOK)
	}
	rejected(t, nh, peer, http.StatusTooManyRequests, "1")
	rejected(t, h, peer, http.StatusTooManyRequests, "1") // the old handler shares the bucket
}

func TestReloadChangedGroupStartsAfresh(t *testing.T) {
	const peer = "192.0.2.1:1000"
	d := newDoor(t, newClock(), Config{})
	link := d.Wrap(GroupLink, status(http.StatusOK), nil)
	hook := d.Wrap(GroupWebhook, status(http.StatusUnauthorized), nil)
	for range defaults[GroupLink].Burst {
		allowed(t, link, peer, http.StatusOK)
	}
	webhookBurst := defaults[GroupWebhook].Burst
	for range webhookBurst - 1 {
		allowed(t, hook, peer, http.StatusUnauthorized) // each failure spends a token
	}

	nd := reload(t, d, Config{Budgets: map[Group]Budget{GroupLink: {Burst: 3}}})
	nlink := nd.Wrap(GroupLink, status(http.StatusOK), nil)
	for range 3 {
		allowed(t, nlink, peer, http.StatusOK)
	}
	rejected(t, nlink, peer, http.StatusTooManyRequests, "1")
	nhook := nd.Wrap(GroupWebhook, status(http.StatusUnauthorized), nil)
	allowed(t, nhook, peer, http.StatusUnauthorized)
	rejected(t, nhook, peer, http.StatusTooManyRequests, "1")
}

func TestReloadInFlight(t *testing.T) {
	const peer = "192.0.2.1:1000"
	clk := newClock()
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{"extra": {Rate: 1, Burst: 5}}})
	b := newBlocker(http.StatusOK)
	perClient := defaults[GroupLink].PerClient
	release := hold(t, d.Wrap(GroupLink, b, nil), b, peer, perClient)
	extra := newBlocker(http.StatusAccepted)
	releaseExtra := hold(t, d.Wrap("extra", extra, nil), extra, peer, 1)

	nd := reload(t, d, Config{}) // drops "extra"
	if _, ok := nd.Budget("extra"); ok {
		t.Fatal(`the new door still has group "extra"`)
	}
	nh := nd.Wrap(GroupLink, status(http.StatusOK), nil)
	rejected(t, nh, peer, http.StatusTooManyRequests, "1") // the old door's requests hold the client's slots
	if got := outcomeCount(nd.groups[GroupLink], outcomeClientConcurrency); got != 1 {
		t.Errorf("client_concurrency: got %d, want 1", got)
	}
	release()
	releaseExtra()
	assertIdle(t, nd.groups[GroupLink])
	assertIdle(t, d.groups["extra"])
	if got := outcomeCount(d.groups["extra"], outcomeOK); got != 1 {
		t.Errorf(`the dropped group's request: got %d ok, want 1`, got)
	}
	allowed(t, nh, peer, http.StatusOK)
}

func TestReloadRefusesABadConfig(t *testing.T) {
	const peer = "192.0.2.1:1000"
	reader, mp := sdkReader()
	d := newDoor(t, newClock(), Config{MeterProvider: mp, Budgets: map[Group]Budget{GroupLink: {Burst: 2}}})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	allowed(t, h, peer, http.StatusOK)

	_, err := d.Reload(Config{MeterProvider: mp, Budgets: map[Group]Budget{"new": {Rate: 1}}})
	if err == nil || !strings.Contains(err.Error(), `group "new"`) {
		t.Fatalf("Reload: got %v, want an error naming group \"new\"", err)
	}
	allowed(t, h, peer, http.StatusOK)
	rejected(t, h, peer, http.StatusTooManyRequests, "1")
	if got := collected(t, reader, "admit.door.requests", GroupLink, "ok"); got != 2 {
		t.Errorf("the old door's metrics after a refused reload: got %d ok, want 2", got)
	}
}

func TestReloadHandsOverMetrics(t *testing.T) {
	const peer = "192.0.2.1:1000"
	reader, mp := sdkReader()
	d := newDoor(t, newClock(), Config{MeterProvider: mp})
	for range 3 {
		allowed(t, d.Wrap(GroupLink, status(http.StatusOK), nil), peer, http.StatusOK)
	}
	nd := reload(t, d, Config{MeterProvider: mp, Budgets: map[Group]Budget{GroupHealth: {Burst: 1}}})
	allowed(t, nd.Wrap(GroupLink, status(http.StatusOK), nil), peer, http.StatusOK)
	allowed(t, nd.Wrap(GroupHealth, status(http.StatusOK), nil), peer, http.StatusOK)
	// Counted once each, by the new door alone: the kept group's counts go
	// on, the changed group's start afresh.
	if got := collected(t, reader, "admit.door.requests", GroupLink, "ok"); got != 4 {
		t.Errorf("link ok: got %d, want 4", got)
	}
	if got := collected(t, reader, "admit.door.requests", GroupHealth, "ok"); got != 1 {
		t.Errorf("health ok: got %d, want 1", got)
	}
}

func TestReloadShadowStartsEveryGroupAfresh(t *testing.T) {
	const peer = "192.0.2.1:1000"
	d := newDoor(t, newClock(), Config{Shadow: true})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range defaults[GroupLink].Burst + 5 {
		allowed(t, h, peer, http.StatusOK)
	}
	nd := reload(t, d, Config{})
	if nd.groups[GroupLink] == d.groups[GroupLink] {
		t.Fatal("the link group was kept across a change of Shadow")
	}
	nh := nd.Wrap(GroupLink, status(http.StatusOK), nil)
	for range defaults[GroupLink].Burst {
		allowed(t, nh, peer, http.StatusOK)
	}
	rejected(t, nh, peer, http.StatusTooManyRequests, "1")
}

func TestSameBudget(t *testing.T) {
	a := defaults[GroupLink]
	tests := []struct {
		name string
		b    func(Budget) Budget
		want bool
	}{
		{"same", func(b Budget) Budget { return b }, true},
		{"burst", func(b Budget) Budget { b.Burst++; return b }, false},
		{"key", func(b Budget) Budget { b.Key.IPv4Prefix = 24; return b }, false},
		{"a store", func(b Budget) Budget { b.Store = uncomparable{}; return b }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameBudget(a, tt.b(a)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	s := uncomparable{}
	if x, y := (Budget{Store: s}), (Budget{Store: s}); sameBudget(x, y) {
		t.Error("two uncomparable stores compared equal; want them told apart without a panic")
	}
}

// collected returns the value of a door counter for group g and outcome o
// from reader.
func collected(t *testing.T, reader interface {
	Collect(context.Context, *metricdata.ResourceMetrics) error
}, name string, g Group, o string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != name || !ok {
				continue
			}
			for _, p := range sum.DataPoints {
				if gv, _ := p.Attributes.Value(attrGroup); gv.AsString() != string(g) {
					continue
				}
				if ov, _ := p.Attributes.Value(attrOutcome); ov.AsString() == o {
					total += p.Value
				}
			}
		}
	}
	return total
}

// uncomparable is a store whose values == cannot compare: comparing two
// would panic.
type uncomparable struct{ _ []int }

func (uncomparable) Allow(context.Context, quota.Rule, string) (quota.Decision, error) {
	return quota.Decision{Allowed: true, Remaining: 100}, nil
}

func (uncomparable) AllowN(context.Context, quota.Rule, string, int) (quota.Decision, error) {
	return quota.Decision{Allowed: true, Remaining: 100}, nil
}

func (uncomparable) Refund(context.Context, quota.Rule, string, int) error { return nil }
