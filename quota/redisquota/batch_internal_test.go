package redisquota

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestGroupsMatchModel decides random batches straight through exec, the
// path every batch takes, and wants each call's decision to be the one it
// would have had alone, in arrival order: calls on one bucket coalesced into
// one script run, fixed windows and GCRA buckets of the same name apart,
// looks, costs that change within a batch and costs above the burst; one
// script run per bucket, and with Config.OneServer batch script runs whose
// buckets take different numbers of arguments.
func TestGroupsMatchModel(t *testing.T) {
	for _, one := range []bool{false, true} {
		t.Run(fmt.Sprintf("one=%v", one), func(t *testing.T) {
			now := t0
			s, err := New(testredis.Client(t), Config{
				Prefix:    testredis.Prefix(t),
				Now:       func() time.Time { return now },
				Timeout:   30 * time.Second,
				Batch:     64,
				OneServer: one,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			rules := []quota.Rule{
				{Name: "a", Limit: 5, Window: time.Second},
				{Name: "a", Limit: 5, Window: time.Second, Algorithm: quota.TokenBucket},
				{Name: "b", Limit: 7, Window: 3 * time.Second, Algorithm: quota.TokenBucket, Burst: 3},
				{Name: "c", Limit: 3, Window: 1234567891 * time.Nanosecond},
			}
			subjects := []string{quota.Subject("x"), quota.Subject("y")}
			models := map[string]*store.Model{}
			rng := rand.New(rand.NewPCG(1, 2))
			coalesced := 0
			for batch := range 300 {
				calls := make([]*call, 1+rng.IntN(24))
				for i := range calls {
					rule, subject := rules[rng.IntN(len(rules))], subjects[rng.IntN(len(subjects))]
					calls[i] = &call{rule: rule, key: s.key(rule, subject), n: rng.IntN(5)}
				}
				gs := groups(calls)
				coalesced += len(calls) - len(gs)
				s.batch.exec(context.Background(), gs)
				for i, c := range calls {
					if c.err != nil {
						t.Fatalf("batch %d call %d: %v", batch, i, c.err)
					}
					if models[c.key] == nil {
						models[c.key] = &store.Model{}
					}
					if want := models[c.key].AllowN(c.rule, now, c.n); c.d != want {
						t.Fatalf("batch %d call %d (%s n=%d at t0+%v): got %+v, want %+v",
							batch, i, c.key, c.n, now.Sub(t0), c.d, want)
					}
				}
				now = now.Add(time.Duration(rng.IntN(700)) * time.Millisecond)
			}
			if coalesced == 0 {
				t.Errorf("no call was coalesced with another")
			}
		})
	}
}

// TestGroups coalesces the calls of a batch on one bucket under one rule,
// in arrival order, and keeps the buckets in order of first arrival.
func TestGroups(t *testing.T) {
	f := quota.Rule{Name: "f", Limit: 10, Window: time.Second}
	g := quota.Rule{Name: "f", Limit: 10, Window: time.Second, Algorithm: quota.TokenBucket}
	other := quota.Rule{Name: "f", Limit: 20, Window: time.Second} // the same bucket as f, misconfigured
	calls := []*call{
		{rule: f, key: "f:1", n: 1},
		{rule: g, key: "g:1", n: 3},
		{rule: f, key: "f:1", n: 0},
		{rule: f, key: "f:2", n: 2},
		{rule: g, key: "g:1", n: 1},
		{rule: other, key: "f:1", n: 1},
		{rule: f, key: "f:1", n: 4},
	}
	got := ""
	for _, gr := range groups(calls) {
		got += fmt.Sprintf("%s/%d:", gr.key, gr.rule.Limit)
		for _, c := range gr.calls {
			got += fmt.Sprint(" ", c.n)
		}
		got += "; "
	}
	if want := "f:1/10: 1 0 4; g:1/10: 3 1; f:2/10: 2; f:1/20: 1; "; got != want {
		t.Errorf("groups: got %q, want %q", got, want)
	}
}
