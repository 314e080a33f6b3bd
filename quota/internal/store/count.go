package store

import (
	"context"
	"sync"
	"time"

	"github.com/admitgo/admit/quota"
)

// CountJob is one Count call sent through a [Batcher], and its answer.
type CountJob struct {
	Hits []quota.Hit
	Now  time.Time // the clock the store counted by
	Err  error
	done chan struct{}
}

// Answer hands the job's caller its answer; the flusher calls it once per
// job, after setting Hits, Now and Err.
func (j *CountJob) Answer() { j.done <- struct{}{} }

// Counts sends Count calls through a batcher in pooled jobs. The zero value
// is ready to use; it is safe for concurrent use.
type Counts struct {
	jobs sync.Pool // of *CountJob with a done channel
}

// Submit counts hits through b and waits for the answer, setting each hit's
// Count. The job counts in a copy of hits: a caller whose deadline passes
// gets its slice back while the flusher may still write to the job, which is
// then left to the garbage collector rather than reused. answered reports
// that err is the job's; otherwise it is b's (ErrBatcherClosed) or ctx's.
func (p *Counts) Submit(ctx context.Context, b *Batcher[*CountJob], hits []quota.Hit) (now time.Time, answered bool, err error) {
	j, _ := p.jobs.Get().(*CountJob)
	if j == nil {
		j = &CountJob{done: make(chan struct{}, 1)}
	}
	j.Hits = append(j.Hits[:0], hits...)
	if err := b.Enqueue(ctx, j); err != nil {
		p.jobs.Put(j)
		return time.Time{}, false, err
	}
	select {
	case <-j.done:
		now, err = j.Now, j.Err
		copy(hits, j.Hits)
		clear(j.Hits)
		*j = CountJob{Hits: j.Hits[:0], done: j.done}
		p.jobs.Put(j)
		return now, true, err
	case <-ctx.Done():
		return time.Time{}, false, ctx.Err()
	}
}
