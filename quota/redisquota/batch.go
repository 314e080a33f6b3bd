package redisquota

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// ErrClosed is the store error of a call made after [Store.Close] on a
// batching store; it follows the failure policy like any store error.
var ErrClosed = errors.New("redisquota: store closed")

// Pipeliner is a [Client] that can also pipeline, which batching needs.
// *redis.Client, *redis.ClusterClient and *redis.Ring satisfy it.
type Pipeliner interface {
	Client
	Pipeline() redis.Pipeliner
}

// A batcher sends concurrent calls to Redis in pipelines of up to max, one
// pipeline in flight (see [store.Batcher]): with 8 callers on a hot bucket,
// one in flight coalesced about 6 calls per script run where four coalesced
// about 2, for 40% more decisions a second (scripts/bench-redis,
// BenchmarkAllow). Go-redis still splits a cluster pipeline across the
// masters, which answer in parallel. A caller waits for its answer or its
// deadline, whichever comes first, so batching never stretches Timeout.
type batcher struct {
	s      *Store
	client Pipeliner
	queue  *store.Batcher[*call]
	calls  sync.Pool // of *call with a done channel
	due    []*call   // the flusher's: the calls of its batch still due
	// execDue decides the calls still due, made once so that a batch
	// allocates no closure.
	execDue func(context.Context, []*call)
}

func newBatcher(s *Store, client Pipeliner, max int) *batcher {
	b := &batcher{s: s, client: client}
	b.execDue = func(ctx context.Context, due []*call) { b.exec(ctx, groups(due)) }
	b.calls.New = func() any { return &call{done: make(chan struct{}, 1)} }
	b.queue = store.NewBatcher(max, b.flush)
	return b
}

// run queues a call of cost n on key under rule, due by deadline, and
// waits for its decision or ctx's end. A call whose ctx ends after it was
// queued may still be counted; its decision is then dropped, as a direct
// call's would be after its deadline.
func (b *batcher) run(ctx context.Context, rule quota.Rule, key string, n int, deadline time.Time) (quota.Decision, error) {
	c := b.calls.Get().(*call)
	c.rule, c.key, c.n, c.deadline = rule, key, n, deadline
	if err := b.queue.Enqueue(ctx, c); err != nil {
		b.calls.Put(c)
		if errors.Is(err, store.ErrBatcherClosed) {
			err = ErrClosed
		}
		return quota.Decision{}, err
	}
	select {
	case <-c.done:
		d, err := c.d, c.err
		*c = call{done: c.done}
		b.calls.Put(c)
		return d, err
	case <-ctx.Done():
		// The flusher still holds c and will answer into c.done; leave c
		// to the garbage collector rather than reuse it.
		return quota.Decision{}, ctx.Err()
	}
}

// flush decides the calls of one batch that are still due, by the earliest
// of their deadlines, answers the others with context.DeadlineExceeded,
// and signals every call: a call has its answer by its deadline, however
// long it waited in the queue, without a timer of its own.
func (b *batcher) flush(calls []*call) {
	b.due = store.FlushDue(calls, b.due, b.execDue)
}

// close stops the flusher once its current pipeline is decided.
func (b *batcher) close() { b.queue.Close() }

// groups gathers calls by bucket and rule, the groups in order of first
// arrival and each group's calls in arrival order, so that one script run
// decides each group. Calls on one bucket under different rules (one rule
// name given two limits) form groups of their own.
func groups(calls []*call) []*group {
	type bucket struct {
		key  string
		rule quota.Rule
	}
	out := make([]*group, 0, len(calls))
	index := make(map[bucket]*group, len(calls))
	for _, c := range calls {
		k := bucket{c.key, c.rule}
		g := index[k]
		if g == nil {
			g = &group{rule: c.rule, key: c.key}
			index[k] = g
			out = append(out, g)
		}
		g.calls = append(g.calls, c)
	}
	return out
}

// exec decides groups in one round trip, one script run each (see
// [Store.runAll]).
func (b *batcher) exec(ctx context.Context, groups []*group) {
	sec, nsec := b.s.clockArgs()
	runs := make([]run, len(groups))
	for i, g := range groups {
		sc, args := g.script(sec, nsec)
		runs[i] = run{sc: sc, key: g.key, args: args}
	}
	b.s.runAll(ctx, b.client, runs)
	for i, g := range groups {
		g.decide(runs[i].reply, runs[i].err)
	}
}
