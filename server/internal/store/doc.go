// Package store opens the shared store a front's --store names (package
// storeurl), the one way the proxy, admit auth and admit rls open theirs:
// the driver's pool or client, the quota store on it (a quota.Charger)
// and, for admit rls's fixed windows, a quota.Counter on the same
// connections. It does what every front does around them: a Redis that
// answers with a refusal (a wrong password or database, which waiting
// will not mend) stops startup, and one that does not answer is logged
// and left to the failure policy; the PostgreSQL table is created at
// startup, or tried again in the background until it is, and swept of
// expired rows; go-redis's own messages go to the front's log.
//
// It never fails because the store is unreachable, only because the
// configuration is wrong, and then with a config.UsageError naming the
// flag. The memory store needs none of this: Open returns nil for it.
package store
