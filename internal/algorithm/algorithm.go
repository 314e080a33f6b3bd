// Package algorithm pairs the door's algorithms with quota's: the one place
// that maps admit.Algorithm to quota.Algorithm and back. They are one
// concept with two zero values (the door's is a token bucket, quota's a
// fixed window), each kept for compatibility, so the values differ and
// need a map; the text of both is quota.Algorithm's String. The door cannot
// export the map, as its surface is full, and this package cannot import
// the door, which imports it, so it takes the door's type as a parameter
// and pairs by the door's numbering, which admit's tests hold to its
// constants.
package algorithm

import (
	"math"

	"github.com/admitgo/admit/quota"
)

// byDoor is quota's algorithm of each of the door's, by the door's value:
// admit.TokenBucket is 0, admit.FixedWindow 1.
var byDoor = [...]quota.Algorithm{quota.TokenBucket, quota.FixedWindow}

// Quota returns quota's algorithm for the door's a; a value the door does
// not define is one quota does not either, which quota.Rule.Validate
// refuses.
func Quota[A ~uint8](a A) quota.Algorithm {
	if int(a) < len(byDoor) {
		return byDoor[a]
	}
	return math.MaxUint8
}

// Door returns the door's algorithm for quota's q; a value quota does not
// define is one the door does not either, which the door refuses.
func Door[A ~uint8](q quota.Algorithm) A {
	for a, each := range byDoor {
		if each == q {
			return A(a)
		}
	}
	return math.MaxUint8
}
