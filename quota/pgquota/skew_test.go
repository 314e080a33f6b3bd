package pgquota_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/internal/testpg"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/pgquota"
)

// TestReplicaClockSkew runs two replicas on one table, the second in a
// bubble whose clock reads 2000-01-01, decades off the first's. Deciding by
// the database's clock (Config.Now nil), they share one window and one GCRA
// bucket as one clock would: the first spends the window's limit and half
// the burst, and the second gets no more of the one and the rest of the
// other. Deciding by their own clocks, as replicas whose Now is their
// time.Now do, they count in different windows, and the replica behind
// finds the bucket's tat decades ahead and gets nothing.
func TestReplicaClockSkew(t *testing.T) {
	fixed := quota.Rule{Name: "skew-fw", Limit: 10, Window: time.Minute}
	gcra := quota.Rule{Name: "skew-gcra", Limit: 10, Window: time.Minute, Algorithm: quota.TokenBucket}
	subject := quota.Subject("203.0.113.5")
	for _, tt := range []struct {
		name     string
		now      func() time.Time // each replica's Config.Now
		fw, gcra int              // what the second replica then admits of 10
	}{
		{"database clock", nil, 0, 5},
		{"replica clocks", time.Now, 10, 0}, // its own window; a bucket it sees decades ahead
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := testpg.New(t)
			first := newStore(t, db.Pool(t), pgquota.Config{Now: tt.now, Timeout: generous})
			for i := range 10 { // the window's limit, and half the GCRA burst
				allowN(t, first, fixed, subject, 1)
				if i%2 == 0 {
					allowN(t, first, gcra, subject, 1)
				}
			}
			synctest.Test(t, func(t *testing.T) {
				second := newStore(t, db.Pool(t), pgquota.Config{Now: tt.now, Timeout: generous})
				fw, gc := 0, 0
				for range 10 {
					if allowN(t, second, fixed, subject, 1).Allowed {
						fw++
					}
					if allowN(t, second, gcra, subject, 1).Allowed {
						gc++
					}
				}
				if fw != tt.fw || gc != tt.gcra {
					t.Errorf("the second replica admitted %d fixed-window and %d GCRA calls of 10, want %d and %d", fw, gc, tt.fw, tt.gcra)
				}
			})
		})
	}
}
