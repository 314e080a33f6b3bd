package rls

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/admitgo/admit/internal/storedown"
)

// counters are the stores a request's hits are counted on: every hit on
// main or, with a per-second store (Options.PerSecondCounter, as
// envoyproxy/ratelimit's REDIS_PERSECOND), the hits of one-second windows
// on it and the rest on main. Each store has its own breaker, so that an
// outage of one leaves the requests that need only the other to it.
type counters struct {
	main, second         Counter // second nil: main counts every hit
	mainDown, secondDown storedown.Breaker
}

// onSecond reports whether h is counted on the per-second store.
func (c *counters) onSecond(h *Hit) bool { return c.second != nil && h.Window == time.Second }

// needs reports which of the stores hits are counted on.
func (c *counters) needs(hits []Hit) (main, second bool) {
	for i := range hits {
		if c.onSecond(&hits[i]) {
			second = true
		} else {
			main = true
		}
	}
	return main, second
}

// ask reports whether each store hits need answers, or is due a probe
// (see storedown.Breaker.Ask) at now.
func (c *counters) ask(hits []Hit, now int64) bool {
	main, second := c.needs(hits)
	return (!main || c.mainDown.Ask(now)) && (!second || c.secondDown.Ask(now))
}

// answered records that the stores hits need answered, and reports whether
// one of them was down until now.
func (c *counters) answered(hits []Hit) (back bool) {
	main, second := c.needs(hits)
	if main && c.mainDown.Answered() {
		back = true
	}
	if second && c.secondDown.Answered() {
		back = true
	}
	return back
}

// failed marks down at now the store err, from Count, says failed.
func (c *counters) failed(err error, now int64) {
	if errors.Is(err, errSecondStore) {
		c.secondDown.Failed(now)
		return
	}
	c.mainDown.Failed(now)
}

// errSecondStore marks a failure of the per-second store.
var errSecondStore = errors.New("the per-second store")

// Count counts hits, each on its store: main's first, then the per-second
// store's, as envoyproxy/ratelimit sends its two pipelines. The time is
// main's when it counted any, else the per-second store's.
func (c *counters) Count(ctx context.Context, hits []Hit) (time.Time, error) {
	main, second := c.needs(hits)
	if !second {
		return c.main.Count(ctx, hits)
	}
	if !main {
		at, err := c.second.Count(ctx, hits)
		if err != nil {
			return at, fmt.Errorf("%w: %w", errSecondStore, err)
		}
		return at, nil
	}
	var onSecond, onMain []Hit
	for _, h := range hits {
		if c.onSecond(&h) {
			onSecond = append(onSecond, h)
		} else {
			onMain = append(onMain, h)
		}
	}
	at, err := c.main.Count(ctx, onMain)
	if err != nil {
		return time.Time{}, err
	}
	if _, err := c.second.Count(ctx, onSecond); err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", errSecondStore, err)
	}
	for i := range hits {
		if c.onSecond(&hits[i]) {
			hits[i].Count, onSecond = onSecond[0].Count, onSecond[1:]
		} else {
			hits[i].Count, onMain = onMain[0].Count, onMain[1:]
		}
	}
	return at, nil
}
