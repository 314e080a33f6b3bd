package drain_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/server/internal/drain"
)

// fake is a server whose calls in flight take busy to finish; it records
// when each step of its drain happened.
type fake struct {
	name  string
	busy  time.Duration
	log   *events
	start time.Time
}

type events struct {
	mu   sync.Mutex // guards list
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (f *fake) Shutdown(ctx context.Context) error {
	t := time.NewTimer(f.busy)
	defer t.Stop()
	select {
	case <-t.C:
		f.log.add(f.name + " done at " + time.Since(f.start).String())
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fake) Close() error {
	f.log.add(f.name + " cut at " + time.Since(f.start).String())
	return nil
}

// TestStop: the front's servers stop together and get the timeout; one
// that has not finished then is cut, and Stop says so; the servers after
// them stop only once they have, within a second.
func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		busy    []time.Duration // the front's, then one after
		timeout time.Duration
		cut     bool
		want    []string
	}{
		{"in time", []time.Duration{time.Second, 2 * time.Second, 0}, 5 * time.Second, false,
			[]string{"front0 done at 1s", "front1 done at 2s", "after done at 2s"}},
		{"one cut", []time.Duration{time.Second, time.Minute, 0}, 5 * time.Second, true,
			[]string{"front0 done at 1s", "front1 cut at 5s", "after done at 5s"}},
		{"after bounded", []time.Duration{0, 0, time.Minute}, 5 * time.Second, false,
			[]string{"front0 done at 0s", "front1 done at 0s", "after cut at 1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &events{}
				start := time.Now()
				front := []drain.Server{&fake{"front0", tc.busy[0], log, start}, &fake{"front1", tc.busy[1], log, start}}
				after := &fake{"after", tc.busy[2], log, start}
				if cut := drain.Stop(tc.timeout, front, after); cut != tc.cut {
					t.Errorf("cut: got %v, want %v", cut, tc.cut)
				}
				slices.Sort(log.list[:2]) // the front's stop together, in either order
				if !slices.Equal(log.list, tc.want) {
					t.Errorf("got %q, want %q", log.list, tc.want)
				}
			})
		})
	}
}
