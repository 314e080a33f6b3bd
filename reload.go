package admit

import (
	"fmt"
	"reflect"
	"slices"

	"go.opentelemetry.io/otel"

	"github.com/admitgo/admit/internal/meter"
	"github.com/admitgo/admit/quota"
)

// Reload returns a door for cfg that takes over d's groups whose budget cfg
// leaves unchanged, for a program that changes its budgets while it runs (a
// configuration reload). Handlers are not moved: build the new door's with
// [Door.Handler] or [Door.Wrap] and swap them in for d's.
//
// A group whose resolved budget is the same in cfg as in d (a Key.Func
// never is: Go cannot compare functions) is the same group in both doors: its client table, buckets and in-flight counts carry
// on, and requests admitted through d's handlers settle against it, so a
// client that spent part of its burst before the reload has only the rest
// after it. A group whose budget changed, and a group d does not have,
// starts afresh, every client with a full bucket and nothing in flight. A
// group cfg drops goes on serving the requests d's handlers admitted until
// they finish. When cfg's Shadow or PolicyHeaders differ from d's, every
// group starts afresh, since a group decides by them.
//
// The new door keeps d's clock, client key and logger, because the buckets
// it takes over are on d's time line and under d's keys: cfg.Now, cfg.Key
// and cfg.Logger are ignored. cfg.Decided and cfg.Waited, when set, replace
// d's hooks in the handlers of the new door; nil keeps d's. Its metrics take over from d's: d stops
// reporting (as after [Door.Close]) and the new door reports every group,
// the counts of a kept group going on and those of a fresh one starting at
// zero. d's handlers keep admitting.
//
// On an error, which names the group and field at fault as [New] does, d
// is unchanged and goes on reporting.
func (d *Door) Reload(cfg Config) (*Door, error) {
	set := d.set
	keep := cfg.Shadow == set.shadow && cfg.PolicyHeaders == set.headers
	if !keep || cfg.Decided != nil || cfg.Waited != nil {
		changed := *set
		changed.shadow, changed.headers = cfg.Shadow, cfg.PolicyHeaders
		if cfg.Decided != nil {
			changed.decided = cfg.Decided
		}
		if cfg.Waited != nil {
			changed.waited = cfg.Waited
		}
		set = &changed
	}
	budgets, err := cfg.budgets()
	if err != nil {
		return nil, err
	}
	nd := &Door{groups: make(map[Group]*group, len(budgets)), set: set}
	now := set.now()
	for _, b := range budgets {
		if old, ok := d.groups[b.name]; ok && keep && sameBudget(old.budget, b.Budget) {
			nd.groups[b.name] = old
			continue
		}
		nd.groups[b.name] = newGroup(b.name, b.Budget, set, now)
	}

	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	mt := mp.Meter(meter.Name)
	// The instruments first, reporting nothing; then d's report ends before
	// the new door's begins, so that no collection sees a kept group twice.
	m, err := newMeters(mt, nil)
	if err == nil {
		err = m.registration.Unregister()
	}
	if err != nil {
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	if err := d.meters.registration.Unregister(); err != nil {
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	if err := m.register(mt, nd.groups); err != nil {
		_ = d.meters.register(mt, d.groups) // d reports again
		return nil, fmt.Errorf("admit: metrics: %w", err)
	}
	nd.meters = m
	if set.shadow && !keep {
		set.logger.Info("admit: shadow mode: limits count would_* outcomes and reject nothing")
	}
	return nd, nil
}

// sameBudget reports whether two resolved budgets decide alike. Stores
// compare as values where their type allows it; two stores of a type that
// cannot be compared are taken as different, and so are two key functions,
// which Go cannot compare.
func sameBudget(a, b Budget) bool {
	if !sameStore(a.Store, b.Store) || a.Key.Func != nil || b.Key.Func != nil ||
		!slices.Equal(a.Exempt, b.Exempt) || !slices.Equal(a.ExemptKeys, b.ExemptKeys) {
		return false
	}
	a.Store, b.Store = nil, nil
	a.Exempt, b.Exempt, a.ExemptKeys, b.ExemptKeys = nil, nil, nil, nil
	return reflect.DeepEqual(a, b) // == cannot compare a struct holding a func
}

func sameStore(a, b quota.Charger) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}
