package pgquota_test

import (
	"context"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

// TestQueuedCallsAnswerByTheirDeadline holds the lock of a hot row, so the
// batch in flight waits for it, and queues more calls behind that batch:
// every call must be answered by the failure policy within the store's
// timeout of its own start, though none has a timer of its own.
func TestQueuedCallsAnswerByTheirDeadline(t *testing.T) {
	db := testpg.New(t)
	pool := db.Pool(t)
	const timeout = 300 * time.Millisecond
	s := newStore(t, pool, pgquota.Config{Timeout: timeout, Batch: 64})
	t.Cleanup(func() { s.Close() })
	rule := quota.Rule{Name: "held", Limit: 1000, Window: time.Hour}
	subject := quota.Subject("held")
	allowN(t, s, rule, subject, 1) // the row exists
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM admit_quota WHERE bucket = $1 FOR UPDATE", rule.Name+":"+subject); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		d       quota.Decision
		err     error
		elapsed time.Duration
	}
	answers := make(chan answer, 64)
	call := func() {
		start := time.Now()
		d, err := s.Allow(ctx, rule, subject)
		answers <- answer{d, err, time.Since(start)}
	}
	check := func(a answer) {
		if a.err == nil || a.d.Allowed {
			t.Errorf("a call behind a held row: got %+v, %v, want refused with an error", a.d, a.err)
		}
		if a.elapsed > timeout+200*time.Millisecond {
			t.Errorf("a call behind a held row took %v, want its timeout %v and little more", a.elapsed, timeout)
		}
	}
	// Wait until a first batch waits for the lock, then queue behind it. A
	// loaded machine may let a first call reach its timeout before the
	// wait is seen; its answer is checked too, and another call takes its
	// place.
	go call()
	pending, waiting := 1, false
	for deadline := time.Now().Add(5 * time.Second); !waiting && time.Now().Before(deadline); {
		select {
		case a := <-answers:
			check(a)
			go call()
		default:
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE '%admit_quota%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		waiting = n > 0
	}
	if !waiting {
		t.Fatal("no batch ever waited for the lock")
	}
	for range 20 {
		go call()
	}
	pending += 20
	for range pending {
		check(<-answers)
	}
}
