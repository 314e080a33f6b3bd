package algorithm

import (
	"testing"

	"github.com/admitgo/admit/quota"
)

// door stands for admit.Algorithm, which admit's own test pairs with this
// package by name.
type door uint8

// TestRoundTrip: each of quota's algorithms is one of the door's and back,
// and a value neither defines stays undefined both ways.
func TestRoundTrip(t *testing.T) {
	for _, q := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
		if back := Quota(Door[door](q)); back != q {
			t.Errorf("%v: to the door and back is %v", q, back)
		}
	}
	if got := Quota(door(7)); got.String() != "Algorithm(255)" {
		t.Errorf("Quota(7) = %v, want an algorithm quota does not define", got)
	}
	if got := Door[door](quota.Algorithm(7)); got != 255 {
		t.Errorf("Door(7) = %d, want a value the door does not define", got)
	}
}
