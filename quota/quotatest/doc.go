// Package quotatest checks that a [quota.Charger] behaves as every admit
// store must, in the manner of testing/fstest: a store's own tests call
// [TestCharger] with a function that opens the store, and it runs the shared
// behaviour as subtests.
//
//	func TestCharger(t *testing.T) {
//		quotatest.TestCharger(t, func(t *testing.T, cfg quotatest.Config) (first, second quota.Charger) {
//			prefix := freshPrefix(t) // keys no other subtest uses
//			c := mystore.Config{Prefix: prefix, Now: cfg.Now, Failure: cfg.Failure}
//			return open(t, c), open(t, c) // two replicas on the same keys
//		})
//	}
//
// The suite checks what the callers of a store can see, and nothing about
// how it stores: decisions equal those of the shared arithmetic for random
// call sequences, fixed windows roll over, GCRA bursts then refills at its
// rate, looks (n = 0) spend nothing, refused GCRA calls leave the bucket as
// it was, caller errors (an invalid rule, a negative cost, a subject that did
// not come from [quota.Subject]) are refused whatever the failure policy and
// never repeat the subject, algorithms of the same rule name count apart, and
// concurrent calls on one instance and on two instances of the same storage
// admit exactly the limit; and, for a store that is a [quota.Reconciler],
// that reconciles add hits without deciding them, past the limit if they
// must, and report the state the store's decisions then see. What only a
// store can check (its rows or keys,
// its expiry, its metrics, its failures) stays in the store's own tests.
//
// Every subtest reads the clock it passes in [Config].Now, so nothing sleeps,
// and opens its own storage, so subtests never see each other's buckets. It
// takes a few seconds on a store with a network round trip per call.
package quotatest
