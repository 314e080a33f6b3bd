package h1

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type ctxKey struct{}

func newRequestContext() *requestContext {
	return &requestContext{Context: context.WithValue(context.Background(), ctxKey{}, "conn")}
}

// TestRequestContext: the request's context carries its connection's
// values, is not done until cancel, and is then done with
// context.Canceled, whether Done was asked for before or after.
func TestRequestContext(t *testing.T) {
	for _, early := range []bool{true, false} {
		c := newRequestContext()
		if got := c.Value(ctxKey{}); got != "conn" {
			t.Errorf("value %v, want the connection's", got)
		}
		if _, ok := c.Deadline(); ok {
			t.Error("a deadline, want none")
		}
		var done <-chan struct{}
		if early {
			done = c.Done()
			select {
			case <-done:
				t.Fatal("done before cancel")
			default:
			}
		}
		if c.Err() != nil {
			t.Fatalf("error %v before cancel, want none", c.Err())
		}
		c.cancel()
		c.cancel() // once
		if !early {
			done = c.Done()
		}
		select {
		case <-done:
		default:
			t.Fatalf("Done asked early %v: not closed after cancel", early)
		}
		if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(c), context.Canceled) {
			t.Errorf("error %v, cause %v, want context.Canceled", c.Err(), context.Cause(c))
		}
	}
}

// TestRequestContextChildren: contexts derived from the request's end
// with it, those made by context.WithCancel and WithTimeout before cancel
// returns, without a goroutine waiting for it; context.AfterFunc's
// function runs once it ends, unless stopped first, and at once on a
// context already done.
func TestRequestContextChildren(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newRequestContext()
		child, stopChild := context.WithCancel(c)
		defer stopChild()
		timed, stopTimed := context.WithTimeout(c, time.Hour)
		defer stopTimed()
		ran := make(chan struct{})
		context.AfterFunc(c, func() { close(ran) })
		stopped := false
		stop := context.AfterFunc(c, func() { stopped = true })
		if !stop() {
			t.Fatal("stop before cancel: false, want true")
		}
		// A child ended by its own cancel is no longer told.
		gone, cancelGone := context.WithCancel(c)
		cancelGone()
		synctest.Wait()
		if len(c.funcs) != 3 {
			t.Fatalf("%d functions registered, want 3 (two children and an AfterFunc)", len(c.funcs))
		}
		if gone.Err() == nil {
			t.Fatal("a canceled child is not done")
		}

		c.cancel()
		for name, ctx := range map[string]context.Context{"WithCancel": child, "WithTimeout": timed} {
			if !errors.Is(ctx.Err(), context.Canceled) {
				t.Errorf("%s child: error %v right after cancel, want context.Canceled", name, ctx.Err())
			}
		}
		<-ran
		synctest.Wait()
		if stopped {
			t.Error("a stopped AfterFunc ran")
		}

		late := make(chan struct{})
		stop = context.AfterFunc(c, func() { close(late) })
		<-late
		if stop() {
			t.Error("stop after the function ran: true, want false")
		}
		done, cancelDone := context.WithCancel(c)
		defer cancelDone()
		if done.Err() == nil {
			t.Error("a child of a done context is not done")
		}
	})
}
