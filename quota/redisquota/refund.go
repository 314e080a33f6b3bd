package redisquota

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/internal/store"
)

var (
	//go:embed fixed_refund.lua
	fixedRefundSrc string
	//go:embed gcra_refund.lua
	gcraRefundSrc string

	fixedRefundScript = newScript(fixedRefundSrc)
	gcraRefundScript  = newScript(gcraRefundSrc)
)

// Refund gives back n calls of subject counted against rule (see
// [quota.Charger]), in one script run bounded by the store's timeout and
// never retried, by the same clock as its decisions: a fixed window gives
// back only while its window is current. A store error is returned; there
// is no decision for a policy to make. A batching store sends refunds on
// their own.
func (s *Store) Refund(ctx context.Context, rule quota.Rule, subject string, n int) error {
	if err := check(rule, subject, n); err != nil || n == 0 {
		return err
	}
	sec, nsec := s.clockArgs()
	ctx, cancel := context.WithTimeout(ctx, s.decider.Timeout)
	defer cancel()
	var err error
	key := s.key(rule, subject)
	if rule.Algorithm == quota.TokenBucket {
		err = s.eval(ctx, gcraRefundScript, key,
			sec, nsec, int64(store.Interval(rule)), n, ceilMillis(grace(rule.Window))).Err()
	} else {
		w := rule.Window
		err = s.eval(ctx, fixedRefundScript, key, sec, nsec, int64(w/time.Second), int64(w%time.Second), n).Err()
	}
	if err != nil {
		return fmt.Errorf("redisquota: rule %q: refund: %w", rule.Name, err)
	}
	return nil
}
