package rls_test

import (
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/quota/pgquota"
	"github.com/admitgo/admit/quota/redisquota"
	"github.com/admitgo/admit/rls"
)

// Every store's Counter counts admit rls's fixed windows as it is. The
// checks live in a test so that importing rls links no store client.
var (
	_ rls.Counter = (*memquota.Counter)(nil)
	_ rls.Counter = (*redisquota.Counter)(nil)
	_ rls.Counter = (*pgquota.Counter)(nil)
)
