package pgquota_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

func TestSweepRemovesOnlyExpired(t *testing.T) {
	db := testpg.New(t)
	cfg := db.Config(t)
	deletes := &deleteCounter{}
	cfg.ConnConfig.Tracer = deletes
	pool := db.Open(t, cfg)
	clk := newClock(t0)
	s := newStore(t, pool, pgquota.Config{Now: clk.Now})
	minute := quota.Rule{Name: "minute", Limit: 1, Window: time.Minute}
	hour := quota.Rule{Name: "hour", Limit: 1, Window: time.Hour}
	gcra := quota.Rule{Name: "gcra", Limit: 1, Window: time.Minute, Algorithm: quota.TokenBucket}
	for i := range 6 {
		allowN(t, s, minute, quota.Subject(fmt.Sprint(i)), 1)
		allowN(t, s, hour, quota.Subject(fmt.Sprint(i)), 1)
		allowN(t, s, gcra, quota.Subject(fmt.Sprint(i)), 1)
	}
	// Within the grace after the minute windows end, nothing goes: a
	// replica whose clock lags may still be counting in them.
	clk.Advance(time.Minute + pgquota.SweepGrace/2)
	if n, err := s.Sweep(context.Background(), 5); err != nil || n != 0 {
		t.Fatalf("Sweep within the grace: got %d, %v; want 0 rows", n, err)
	}
	deletes.n.Store(0)
	// Twelve rows expire: the minute windows at t0+1m, the GCRA buckets
	// (full again at t0+1m, kept for their burst period and then the longer
	// of it and a minute) just after t0+2m; each goes once the grace has
	// passed too.
	clk.Advance(time.Minute + time.Second + pgquota.SweepGrace/2)
	n, err := s.Sweep(context.Background(), 5)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != 12 {
		t.Errorf("swept: got %d, want 12", n)
	}
	if got := deletes.n.Load(); got != 3 {
		t.Errorf("statements: got %d, want 3 (5 + 5 + 2 rows)", got)
	}
	if got := rows(t, pool, "true"); got != 6 {
		t.Errorf("rows left: got %d, want 6", got)
	}
	if got := rows(t, pool, "bucket LIKE 'hour:%'"); got != 6 {
		t.Errorf("live rows left: got %d, want 6", got)
	}
	// The swept buckets decide as they would have.
	if d := allowN(t, s, minute, quota.Subject("0"), 1); !d.Allowed {
		t.Errorf("minute after sweep: got %+v, want allowed", d)
	}
	if d := allowN(t, s, hour, quota.Subject("0"), 1); d.Allowed {
		t.Errorf("hour after sweep: got %+v, want refused", d)
	}
	if n, err := s.Sweep(context.Background(), 0); err != nil || n != 0 {
		t.Errorf("second sweep: got %d, %v, want 0, nil", n, err)
	}
}

func TestSweepConcurrent(t *testing.T) {
	db := testpg.New(t)
	pool := db.Pool(t)
	clk := newClock(t0)
	s := newStore(t, pool, pgquota.Config{Now: clk.Now})
	_, err := pool.Exec(context.Background(), `INSERT INTO admit_quota (bucket, window_start, count, expires_at)
		SELECT 'r:' || i, $1, 1, $2 FROM generate_series(1, 3000) AS i`, t0.Add(-time.Hour), t0.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	allowN(t, s, quota.Rule{Name: "live", Limit: 1, Window: time.Hour}, quota.Subject("x"), 1)
	var wg sync.WaitGroup
	var swept [2]int64
	for i := range swept {
		other := newStore(t, db.Pool(t), pgquota.Config{Now: clk.Now})
		wg.Go(func() {
			n, err := other.Sweep(context.Background(), 100)
			if err != nil {
				t.Errorf("sweep %d: %v", i, err)
			}
			swept[i] = n
		})
	}
	wg.Wait()
	if total := swept[0] + swept[1]; total != 3000 {
		t.Errorf("swept: got %d + %d = %d, want 3000", swept[0], swept[1], total)
	}
	if got := rows(t, pool, "true"); got != 1 {
		t.Errorf("rows left: got %d, want 1", got)
	}
}

func TestSweepBatch(t *testing.T) {
	s, err := pgquota.New(unreachable(t), pgquota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sweep(context.Background(), -1); !errors.Is(err, pgquota.ErrConfig) {
		t.Errorf("Sweep(-1): got %v, want ErrConfig", err)
	}
	if _, err := s.Sweep(context.Background(), 0); err == nil {
		t.Error("Sweep on an unreachable server: got nil, want an error")
	}
}

func TestSweepEvery(t *testing.T) {
	db := testpg.New(t)
	synctest.Test(t, func(t *testing.T) {
		pool := db.Pool(t)
		// Inside the bubble time.Now is the bubble's clock, which starts at
		// 2000-01-01 and moves only when every goroutine here waits; the
		// store decides and sweeps by it rather than by the database's.
		s := newStore(t, pool, pgquota.Config{Now: time.Now})
		rule := quota.Rule{Name: "r", Limit: 1, Window: time.Minute}
		allowN(t, s, rule, quota.Subject("a"), 1)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			s.SweepEvery(ctx, 10*time.Minute, 0)
			close(done)
		}()
		synctest.Wait() // the first sweep ran and found nothing expired
		if got := rows(t, pool, "true"); got != 1 {
			t.Fatalf("rows after the first sweep: got %d, want 1", got)
		}
		time.Sleep(10 * time.Minute) // the bubble's clock: the next tick
		synctest.Wait()
		if got := rows(t, pool, "true"); got != 0 {
			t.Errorf("rows after a tick: got %d, want 0", got)
		}
		cancel()
		<-done
	})
}
