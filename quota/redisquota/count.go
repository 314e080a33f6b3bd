package redisquota

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

// DefaultCountPrefix starts every counter's key when [CounterConfig].Prefix
// is empty.
const DefaultCountPrefix = "admit:count:"

// Hit is one addition to a counter, as [Counter.Count] takes it.
//
// Deprecated: use [quota.Hit], which Hit is; every store's Counter takes it.
type Hit = quota.Hit

// CounterConfig configures a [Counter]. The zero value is valid: the
// default prefix, the Redis server's clock, [DefaultTimeout], no batching.
type CounterConfig struct {
	// Prefix starts every key; empty means [DefaultCountPrefix]. It must not
	// hold "{", which would take the place of the counter's hash tag.
	Prefix string
	// Now is the clock windows are aligned by; nil means the Redis
	// server's own (TIME, read by each script run), so that replicas whose
	// clocks disagree count in the same windows. Tests inject one.
	Now func() time.Time
	// Timeout bounds each Count, the round trip included; 0 means
	// [DefaultTimeout].
	Timeout time.Duration
	// Batch, above 1, sends the hits of concurrent Count calls together, up
	// to Batch calls in one pipeline, one script run per counter: hits on
	// one counter are added in one run and each gets the count it would
	// have had alone. The client must then be a [Pipeliner], and the
	// counter must be closed with [Counter.Close]. 0 or 1 sends each Count
	// in a pipeline of its own.
	Batch int
}

// Counter counts hits in fixed windows aligned to the Unix epoch, as
// envoyproxy/ratelimit counts in Redis (INCRBY on a key of the window):
// every hit is added, over a limit or not, and the caller decides from the
// count after. Each counter is one hash key, Prefix + "{" + Key + "}:" +
// window seconds, holding its window's start and count; the braces make the
// Key its hash tag, so on Redis Cluster a script run touches one declared
// key. A counter expires a second after its window ends.
//
// Use [NewCounter]; the zero Counter is not usable. It is safe for
// concurrent use.
type Counter struct {
	client  Pipeliner
	prefix  string
	now     func() time.Time // nil: the server's clock
	timeout time.Duration
	batch   *store.Batcher[*store.CountJob] // nil unless Batch > 1
	counts  store.Counts
}

var (
	//go:embed count.lua
	countSrc    string
	countScript = script{src: countSrc, hash: redis.NewScript(countSrc).Hash()}
)

// NewCounter returns a counter that counts through client, which must not
// retry commands (a retried script could count a hit twice) and must
// honour context deadlines, as for [New]. It does not contact Redis.
func NewCounter(client Pipeliner, cfg CounterConfig) (*Counter, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrConfig)
	}
	if err := checkClient(client); err != nil {
		return nil, err
	}
	if strings.Contains(cfg.Prefix, "{") {
		return nil, fmt.Errorf("%w: Prefix %q holds \"{\", which would take the place of the counter's hash tag", ErrConfig, cfg.Prefix)
	}
	if cfg.Timeout < 0 || cfg.Batch < 0 {
		return nil, fmt.Errorf("%w: Timeout %v and Batch %d, want 0 (the default) or more", ErrConfig, cfg.Timeout, cfg.Batch)
	}
	c := &Counter{client: client, prefix: cfg.Prefix, now: cfg.Now, timeout: cfg.Timeout}
	if c.prefix == "" {
		c.prefix = DefaultCountPrefix
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if cfg.Batch > 1 {
		c.batch = store.NewBatcher(cfg.Batch, c.flush)
	}
	return c, nil
}

// Close stops a batching counter's flusher; later calls fail with
// [ErrClosed]. It does not close the client. It always returns nil.
func (c *Counter) Close() error {
	if c.batch != nil {
		c.batch.Close()
	}
	return nil
}

// Count adds each hit's N to its counter's count in the window that holds
// Redis's current time, in order, and sets the hit's Count to the count
// after, so that two hits on one counter see one another as two requests
// would. It returns the time Redis counted by, in whole seconds. An error
// means Redis did not answer in time or failed; some hits may then have
// been counted. The call is never retried.
func (c *Counter) Count(ctx context.Context, hits []quota.Hit) (time.Time, error) {
	for _, h := range hits {
		if h.Window < time.Second || h.Window%time.Second != 0 {
			return time.Time{}, fmt.Errorf("redisquota: window %v, want whole seconds, at least one", h.Window)
		}
		if strings.Contains(h.Key, "{") {
			return time.Time{}, fmt.Errorf("redisquota: counter key %q holds \"{\"", h.Key)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.batch == nil {
		j := store.CountJob{Hits: hits}
		c.exec(ctx, []*store.CountJob{&j})
		return j.Now, j.Err
	}
	now, answered, err := c.counts.Submit(ctx, c.batch, hits)
	if !answered {
		if errors.Is(err, store.ErrBatcherClosed) {
			err = ErrClosed
		}
		err = fmt.Errorf("redisquota: count: %w", err)
	}
	return now, err
}

// flush counts one batch under the counter's timeout and answers its jobs.
func (c *Counter) flush(jobs []*store.CountJob) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	c.exec(ctx, jobs)
	cancel()
	for _, j := range jobs {
		j.Answer()
	}
}

// countGroup is the hits of a batch on one counter, in arrival order.
type countGroup struct {
	key   string
	total uint64
	hits  []*quota.Hit
	jobs  []*store.CountJob
}

// exec counts the hits of jobs in one pipeline, one script run per counter,
// and sets each job's time and error.
func (c *Counter) exec(ctx context.Context, jobs []*store.CountJob) {
	var groups []*countGroup
	index := make(map[string]*countGroup)
	for _, j := range jobs {
		for i := range j.Hits {
			h := &j.Hits[i]
			key := c.prefix + "{" + h.Key + "}:" + strconv.FormatInt(int64(h.Window/time.Second), 10)
			g := index[key]
			if g == nil {
				g = &countGroup{key: key}
				index[key] = g
				groups = append(groups, g)
			}
			g.total += h.N
			g.hits = append(g.hits, h)
			g.jobs = append(g.jobs, j)
		}
	}
	var sec any = ""
	if c.now != nil {
		sec = c.now().Unix()
	}
	pipe := c.client.Pipeline()
	cmds := make([]*redis.Cmd, len(groups))
	args := make([][]any, len(groups))
	for i, g := range groups {
		args[i] = []any{sec, int64(g.hits[0].Window / time.Second), strconv.FormatUint(g.total, 10)}
		cmds[i] = pipe.EvalSha(ctx, countScript.hash, []string{g.key}, args[i]...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	again := false
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			cmds[i] = pipe.Eval(ctx, countScript.src, []string{groups[i].key}, args[i]...)
			again = true
		}
	}
	if again {
		_, _ = pipe.Exec(ctx)
	}
	for i, g := range groups {
		now, after, err := countReply(cmds[i])
		if err == nil && after < g.total {
			err = fmt.Errorf("script replied count %d below the %d just added", after, g.total)
		}
		count := after - g.total
		for k, h := range g.hits {
			j := g.jobs[k]
			if err != nil {
				j.Err = fmt.Errorf("redisquota: count: %w", err)
				continue
			}
			count += h.N
			h.Count = count
			if j.Now.Before(now) {
				j.Now = now
			}
		}
	}
}

// countReply returns count.lua's reply: the time it counted by and the
// count after.
func countReply(cmd *redis.Cmd) (time.Time, uint64, error) {
	reply, err := cmd.Slice()
	if err != nil {
		return time.Time{}, 0, err
	}
	v, err := integers(reply, 2)
	if err != nil {
		return time.Time{}, 0, err
	}
	if v[1] < 0 {
		return time.Time{}, 0, fmt.Errorf("script replied count %d", v[1])
	}
	return time.Unix(v[0], 0), uint64(v[1]), nil
}
