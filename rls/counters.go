package rls

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/admitgo/admit/internal/storedown"
)

// counters are the stores a request's hits are counted on: every hit on
// main or, with a per-second store (Options.PerSecondCounter, as
// envoyproxy/ratelimit's REDIS_PERSECOND), the hits of one-second windows
// on it and the rest on main. Each store has its own breaker, which Count
// keeps as each store answers or fails, so that an outage of one leaves
// the requests that need only the other to it, and a store that answered
// is asked again whatever the other did.
type counters struct {
	main, second         Counter // second nil: main counts every hit
	mainDown, secondDown storedown.Breaker
	now                  func() int64 // the breakers' time line
	log                  *slog.Logger
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
// (see storedown.Breaker.Ask). The per-second store is asked first: while
// it is down and no probe of it is due, main's probe is left for a call
// that needs main alone.
func (c *counters) ask(hits []Hit) bool {
	main, second := c.needs(hits)
	now := c.now()
	return (!second || c.secondDown.Ask(now)) && (!main || c.mainDown.Ask(now))
}

// Count counts hits, each on its store: main's first, then the per-second
// store's, as envoyproxy/ratelimit sends its two pipelines. The time is
// main's when it counted any, else the per-second store's.
func (c *counters) Count(ctx context.Context, hits []Hit) (time.Time, error) {
	main, second := c.needs(hits)
	if !second {
		at, err := c.main.Count(ctx, hits)
		return at, c.kept(&c.mainDown, err)
	}
	if !main {
		at, err := c.second.Count(ctx, hits)
		return at, c.kept(&c.secondDown, err)
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
	if err := c.kept(&c.mainDown, err); err != nil {
		return time.Time{}, err
	}
	if _, err := c.second.Count(ctx, onSecond); err != nil {
		return time.Time{}, c.kept(&c.secondDown, err)
	}
	c.kept(&c.secondDown, nil)
	for i := range hits {
		if c.onSecond(&hits[i]) {
			hits[i].Count, onSecond = onSecond[0].Count, onSecond[1:]
		} else {
			hits[i].Count, onMain = onMain[0].Count, onMain[1:]
		}
	}
	return at, nil
}

// kept records in b, a store's breaker, whether it answered (err nil),
// logging its return after an outage, or failed, and returns err, naming
// the per-second store when b is its breaker.
func (c *counters) kept(b *storedown.Breaker, err error) error {
	name := "the counter"
	if b == &c.secondDown {
		name = "the per-second counter"
	}
	if err == nil {
		if b.Answered() {
			c.log.Info("rls: " + name + " counts again")
		}
		return nil
	}
	b.Failed(c.now())
	if b == &c.secondDown {
		return fmt.Errorf("%s: %w", name, err)
	}
	return err
}
