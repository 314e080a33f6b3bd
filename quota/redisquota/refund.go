package redisquota

import (
	"context"
	_ "embed"
	"fmt"

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
// never retried. A store error is returned; there is no decision for a
// policy to make.
func (s *Store) Refund(ctx context.Context, rule quota.Rule, subject string, n int) error {
	if err := check(rule, subject, n); err != nil || n == 0 {
		return err
	}
	now := s.now()
	ctx, cancel := context.WithTimeout(ctx, s.decider.Timeout)
	defer cancel()
	var err error
	if rule.Algorithm == quota.GCRA {
		err = s.run(ctx, gcraRefundScript, s.gcraKey(rule, subject),
			now.Unix(), now.Nanosecond(), int64(store.Interval(rule)), n, ceilMillis(grace(rule.Window))).Err()
	} else {
		err = s.run(ctx, fixedRefundScript, s.fixedKey(rule, subject, store.WindowStart(now, rule.Window)), n).Err()
	}
	if err != nil {
		return fmt.Errorf("redisquota: rule %q: refund: %w", rule.Name, err)
	}
	return nil
}
