package redisquota

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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

// batchFlushers is how many pipelines a batching store keeps in flight. While
// all are busy, calls queue up and leave together in the next one; a lone call
// finds a flusher idle and leaves at once.
const batchFlushers = 4

// A batcher sends concurrent scripts to Redis in pipelines of up to max. Its
// flushers each take the first queued call, add whatever else is queued, and
// send them in one round trip. A caller waits for its answer or its deadline,
// whichever comes first, so batching never stretches Timeout.
type batcher struct {
	client  Pipeliner
	max     int
	timeout time.Duration
	queue   chan *call
	stop    chan struct{}
	closed  atomic.Bool
	wg      sync.WaitGroup
}

// A call is one script run waiting in a batch.
type call struct {
	sc   script
	key  string
	args []any
	done chan *redis.Cmd // buffered: a flusher never waits for a caller
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan *redis.Cmd, 1)} }}

func newBatcher(client Pipeliner, max int, timeout time.Duration) *batcher {
	b := &batcher{
		client:  client,
		max:     max,
		timeout: timeout,
		queue:   make(chan *call, max*batchFlushers),
		stop:    make(chan struct{}),
	}
	for range batchFlushers {
		b.wg.Go(b.flush)
	}
	return b
}

// run queues sc on key and waits for its result or ctx's end. A call whose
// ctx ends after it was queued may still run; its result is then dropped, as
// a direct call's would be after its deadline.
func (b *batcher) run(ctx context.Context, sc script, key string, args []any) *redis.Cmd {
	if b.closed.Load() {
		return failed(ctx, ErrClosed)
	}
	c := callPool.Get().(*call)
	c.sc, c.key, c.args = sc, key, args
	select {
	case b.queue <- c:
	case <-ctx.Done():
		callPool.Put(c)
		return failed(ctx, ctx.Err())
	case <-b.stop:
		callPool.Put(c)
		return failed(ctx, ErrClosed)
	}
	select {
	case cmd := <-c.done:
		*c = call{done: c.done}
		callPool.Put(c)
		return cmd
	case <-ctx.Done():
		// A flusher still holds c and will answer into c.done; leave c to
		// the garbage collector rather than reuse it.
		return failed(ctx, ctx.Err())
	}
}

func failed(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return cmd
}

func (b *batcher) flush() {
	calls := make([]*call, 0, b.max)
	cmds := make([]*redis.Cmd, 0, b.max)
	for {
		select {
		case c := <-b.queue:
			calls = append(calls[:0], c)
		case <-b.stop:
			return
		}
	fill:
		for len(calls) < b.max {
			select {
			case c := <-b.queue:
				calls = append(calls, c)
			default:
				break fill
			}
		}
		cmds = b.exec(calls, cmds[:0])
		for i, c := range calls {
			c.done <- cmds[i]
		}
		clear(calls)
		clear(cmds)
	}
}

// exec sends calls' scripts in one pipeline by SHA-1, and those Redis answered
// NOSCRIPT (nothing ran) once more with their source.
func (b *batcher) exec(calls []*call, cmds []*redis.Cmd) []*redis.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	pipe := b.client.Pipeline()
	for _, c := range calls {
		cmds = append(cmds, pipe.EvalSha(ctx, c.sc.hash, []string{c.key}, c.args...))
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	again := false
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			cmds[i] = pipe.Eval(ctx, calls[i].sc.src, []string{calls[i].key}, calls[i].args...)
			again = true
		}
	}
	if again {
		_, _ = pipe.Exec(ctx)
	}
	return cmds
}

// close stops the flushers once their current pipelines are answered.
func (b *batcher) close() {
	if b.closed.CompareAndSwap(false, true) {
		close(b.stop)
		b.wg.Wait()
	}
}
