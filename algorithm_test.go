package admit

import (
	"testing"
	"time"

	"github.com/admitgo/admit/internal/algorithm"
	"github.com/admitgo/admit/quota"
)

// TestAlgorithmsPairWithQuota holds internal/algorithm, which pairs the
// door's algorithms with quota's by the door's numbering, to the door's
// constants, and a shared store's rule to its group's algorithm.
func TestAlgorithmsPairWithQuota(t *testing.T) {
	for a, q := range map[Algorithm]quota.Algorithm{TokenBucket: quota.TokenBucket, FixedWindow: quota.FixedWindow} {
		if got := algorithm.Quota(a); got != q {
			t.Errorf("algorithm.Quota(%d) = %v, want %v", a, got, q)
		}
		if got := algorithm.Door[Algorithm](q); got != a {
			t.Errorf("algorithm.Door(%v) = %d, want %d", q, got, a)
		}
		b := Budget{Algorithm: a, Rate: 10, Burst: 5, Limit: 5, Window: time.Second}
		if got := b.rule("api").Algorithm; got != q {
			t.Errorf("the store's rule of a group of algorithm %d counts as %v, want %v", a, got, q)
		}
	}
}
