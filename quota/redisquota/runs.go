package redisquota

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A run is one script run on one bucket: what a batch sends for a group of
// calls, or a reconcile for a tally.
type run struct {
	sc    script
	key   string
	args  []any // the script's arguments, the clock's two first
	reply []any // the script's reply, once run
	err   error
}

// batchKeys is how many buckets one batch script run takes at most, so
// that one run holds Redis up for a bounded time (at the 10 to 15 µs a
// bucket BenchmarkReconcile measured, about a millisecond); more go as
// further script runs in the same pipeline.
const batchKeys = 64

var (
	//go:embed batch.lua
	batchSrc string
	// batchScript runs the scripts a batch or a reconcile sends on many
	// buckets (see batch.lua).
	batchScript = newBatchScript(fixedScript, gcraScript, gcraAddScript)
)

// batched returns sc as a batch script's run number, replying replies
// values.
func (sc script) batched(number, replies int) script {
	sc.number, sc.replies = number, replies
	return sc
}

// newBatchScript returns batch.lua with each script's own text in place as
// its run number, a function of its own KEYS and ARGV that reads the
// batch's clock. The scripts must be numbered 1, 2 and so on, in order.
func newBatchScript(scripts ...script) script {
	var b strings.Builder
	for i, sc := range scripts {
		if sc.number != i+1 || sc.replies < 1 {
			panic(fmt.Sprintf("redisquota: batch script %d is numbered %d, with %d replies", i+1, sc.number, sc.replies))
		}
		fmt.Fprintf(&b, "runs[%d] = function(KEYS, ARGV)\nlocal clock = batch_clock\n%s\nend\n", sc.number, sc.body)
	}
	const marker = "\n--@scripts@\n"
	if !strings.Contains(batchSrc, marker) {
		panic("redisquota: batch.lua has no --@scripts@ line")
	}
	return newScript(strings.Replace(batchSrc, marker, "\n"+b.String(), 1))
}

// runAll runs every run and sets its reply or error, in one round trip
// when p is not nil: with Config.OneServer as batch script runs of up to
// [batchKeys] buckets, otherwise as one script run per bucket, which a
// cluster client sends to each bucket's master. Runs Redis answers
// NOSCRIPT (nothing ran) go once more with their source. Without p, the
// runs go one by one.
func (s *Store) runAll(ctx context.Context, p Pipeliner, runs []run) {
	switch {
	case p == nil:
		for i := range runs {
			r := &runs[i]
			r.reply, r.err = s.eval(ctx, r.sc, r.key, r.args...).Slice()
		}
	case s.oneServer:
		s.runBatches(ctx, p, runs, batchKeys)
	default:
		s.runBatches(ctx, p, runs, 1)
	}
	for i := range runs {
		if runs[i].err != nil {
			s.failed()
			return
		}
	}
}

// runBatches runs runs in script runs of up to size buckets, in one
// pipeline, and hands each run its part of its batch's reply. A batch of
// one bucket runs that bucket's own script: with size 1 every bucket does,
// and on one server the batch script's setup costs Redis more than it
// saves on one.
func (s *Store) runBatches(ctx context.Context, p Pipeliner, runs []run, size int) {
	pipe := p.Pipeline()
	batches := make([]batch, 0, (len(runs)+size-1)/size)
	for len(runs) > 0 {
		n := min(len(runs), size)
		b := newBatch(runs[:n])
		b.cmd = pipe.EvalSha(ctx, b.sc.hash, b.keys, b.args...)
		batches = append(batches, b)
		runs = runs[n:]
	}
	_, _ = pipe.Exec(ctx)
	again := false
	for i := range batches {
		if b := &batches[i]; redis.HasErrorPrefix(b.cmd.Err(), "NOSCRIPT") {
			b.cmd = pipe.Eval(ctx, b.sc.src, b.keys, b.args...)
			again = true
		}
	}
	if again {
		_, _ = pipe.Exec(ctx)
	}
	for _, b := range batches {
		reply, err := b.cmd.Slice()
		if err == nil && len(b.runs) > 1 {
			err = split(reply, b.runs)
		} else if err == nil {
			b.runs[0].reply = reply
		}
		if err != nil {
			for i := range b.runs {
				b.runs[i].err = err
			}
		}
	}
}

// A batch is one script run of runBatches: the batch script on its runs'
// buckets, or a lone run's own script.
type batch struct {
	runs []run
	sc   script
	keys []string
	args []any
	cmd  *redis.Cmd
}

func newBatch(runs []run) batch {
	if len(runs) == 1 {
		return batch{runs: runs, sc: runs[0].sc, keys: []string{runs[0].key}, args: runs[0].args}
	}
	b := batch{runs: runs, sc: batchScript, keys: make([]string, len(runs))}
	n := 2
	for _, r := range runs {
		n += 1 + len(r.args)
	}
	b.args = append(make([]any, 0, n), runs[0].args[0], runs[0].args[1])
	for i, r := range runs {
		b.keys[i] = r.key
		b.args = append(b.args, r.sc.number, r.sc.replies, len(r.args)-2)
		b.args = append(b.args, r.args[2:]...)
	}
	return b
}

// split hands each run its part of a batch script's reply: as many values
// as its script replies, in order, or the error whose text stands first in
// its part, where every reply starts with an integer, when its run failed.
func split(reply []any, runs []run) error {
	want := 0
	for _, r := range runs {
		want += r.sc.replies
	}
	if len(reply) != want {
		return fmt.Errorf("batch script replied %d values for %d runs, want %d", len(reply), len(runs), want)
	}
	for i := range runs {
		n := runs[i].sc.replies
		if msg, ok := reply[0].(string); ok {
			runs[i].err = fmt.Errorf("%s", strings.TrimPrefix(msg, "E "))
		} else {
			runs[i].reply = reply[:n:n]
		}
		reply = reply[n:]
	}
	return nil
}
