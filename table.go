package admit

import (
	"net/netip"

	"github.com/admitgo/admit/internal/lru"
)

// table is a shard's client table: a fixed-capacity LRU that tracks limits
// precisely for the most recently seen clients and never holds more than
// its share of MaxClients. It is the one bounded table quota/memquota
// keeps its buckets in too; its shard's mutex guards it.
type table = lru.Table[netip.Prefix, entry]

// entry is one client's bucket and in-flight count. held counts the tokens
// its unsettled charge-on-failure requests hold.
type entry struct {
	bucket   bucket
	inflight int32
	held     int32
}

func newTable(max int) table { return lru.New[netip.Prefix, entry](max) }
