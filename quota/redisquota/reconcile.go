package redisquota

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

var (
	//go:embed gcra_add.lua
	gcraAddSrc    string
	gcraAddScript = newScript(gcraAddSrc).batched(3, 3)
)

var _ quota.Reconciler = (*Store)(nil)

// Reconcile adds each tally's hits to its bucket without deciding them and
// reports the bucket's state (see [quota.Reconciler]): one script run per
// bucket, on its one key, all in one pipeline when the client can pipeline
// (a Cluster client splits it by master; with Config.OneServer the runs go
// 64 to a batch script), bounded by ctx's deadline, or the store's timeout when ctx
// has none, and never retried. A fixed window runs fixed.lua with the hits
// as one cost; a GCRA bucket runs gcra_add.lua.
func (s *Store) Reconcile(ctx context.Context, tallies []quota.Tally) error {
	if err := store.CheckTallies(tallies, check); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.decider.Timeout)
		defer cancel()
	}
	sec, nsec := s.clockArgs()
	runs := make([]run, len(tallies))
	for i := range tallies {
		sc, key, args := s.tallyScript(&tallies[i], sec, nsec)
		runs[i] = run{sc: sc, key: key, args: args}
	}
	p, _ := s.client.(Pipeliner)
	s.runAll(ctx, p, runs)
	return readTallies(tallies, runs)
}

// tallyScript returns the script, key and arguments that add t's hits.
func (s *Store) tallyScript(t *quota.Tally, sec, nsec any) (script, string, []any) {
	key := s.key(t.Rule, t.Subject)
	grace := ceilMillis(grace(t.Rule.Window))
	if t.Rule.Algorithm == quota.TokenBucket {
		return gcraAddScript, key, []any{sec, nsec, int64(store.Interval(t.Rule)), t.Hits, grace}
	}
	w := t.Rule.Window
	return fixedScript, key, []any{sec, nsec, int64(w / time.Second), int64(w % time.Second), grace, t.Hits}
}

// readTallies sets each tally's state from its run's reply, or returns
// the first error.
func readTallies(tallies []quota.Tally, runs []run) error {
	for i, r := range runs {
		t := &tallies[i]
		err := r.err
		if err == nil {
			err = readTally(t, r.reply)
		}
		if err != nil {
			return fmt.Errorf("redisquota: reconcile: rule %q: %w", t.Rule.Name, err)
		}
	}
	return nil
}

// readTally reads one reply: fixed.lua's {now s, now ns, count before} or
// gcra_add.lua's {now s, now ns, tat}.
func readTally(t *quota.Tally, reply []any) error {
	if t.Rule.Algorithm == quota.FixedWindow {
		v, err := integers(reply, 3)
		if err == nil && len(reply) != 3 {
			err = fmt.Errorf("script replied %v, want 3 integers", reply)
		}
		if err != nil {
			return err
		}
		t.Now, t.Count, t.TAT = time.Unix(v[0], v[1]), v[2]+int64(t.Hits), time.Time{}
		return nil
	}
	v, err := integers(reply, 2)
	if err != nil {
		return err
	}
	tat, ok := "", len(reply) == 3
	if ok {
		tat, ok = reply[2].(string) // "" for a full bucket
	}
	if !ok {
		return fmt.Errorf("script replied %v, want 2 integers and a tat", reply)
	}
	t.Now, t.Count = time.Unix(v[0], v[1]), 0
	t.TAT, err = parseTAT(tat)
	return err
}
