package store

import (
	"context"
	"time"
)

// DueCall is a batched call as FlushDue sees it.
type DueCall interface {
	// Deadline is when the call must be answered by.
	Deadline() time.Time
	// Expire answers the call with context.DeadlineExceeded.
	Expire()
	// Signal tells the call's caller that its answer is set.
	Signal()
}

// FlushDue decides the calls of one batch that are still due with decide,
// under a context ending at the earliest of their deadlines, answers the
// others with context.DeadlineExceeded, and signals every call: a call has
// its answer by its deadline, however long it waited in the queue, without
// a timer of its own. due is scratch space; FlushDue returns it emptied for
// the next batch.
func FlushDue[C DueCall](calls, due []C, decide func(context.Context, []C)) []C {
	now := time.Now()
	var deadline time.Time
	due = due[:0]
	for _, c := range calls {
		if !c.Deadline().After(now) {
			c.Expire()
			continue
		}
		if len(due) == 0 || c.Deadline().Before(deadline) {
			deadline = c.Deadline()
		}
		due = append(due, c)
	}
	if len(due) > 0 {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		decide(ctx, due)
		cancel()
	}
	clear(due)
	for _, c := range calls {
		c.Signal()
	}
	return due[:0]
}
