package admit

import "net/netip"

// probes is how many of the oldest entries a miss on a full table examines
// before it falls back to the shared bucket.
const probes = 8

// table is a fixed-capacity LRU of client buckets: it tracks limits precisely
// for the most recently seen clients and never holds more than max entries. It
// has no lock; its shard's mutex guards it. Entries live in one slice and link
// by index, so a full table allocates nothing.
type table struct {
	max     int
	index   map[netip.Prefix]int32
	entries []entry
	head    int32 // most recently used, or -1
	tail    int32 // least recently used, or -1
}

// entry is one client's bucket and in-flight count. held counts the tokens
// its unsettled charge-on-failure requests hold.
type entry struct {
	key        netip.Prefix
	bucket     bucket
	inflight   int32
	held       int32
	prev, next int32 // toward head and toward tail; -1 at the ends
}

func newTable(max int) table {
	return table{max: max, index: make(map[netip.Prefix]int32), head: -1, tail: -1}
}

func (t *table) len() int { return len(t.entries) }

func (t *table) full() bool { return len(t.entries) >= t.max }

// lookup returns the slot of key and moves it to the front.
func (t *table) lookup(key netip.Prefix) (int32, bool) {
	i, ok := t.index[key]
	if ok {
		t.toFront(i)
	}
	return i, ok
}

// insert adds key at the front; the table must not be full.
func (t *table) insert(key netip.Prefix, b bucket) int32 {
	i := int32(len(t.entries))
	t.entries = append(t.entries, entry{key: key, bucket: b, prev: -1, next: -1})
	t.index[key] = i
	t.linkFront(i)
	return i
}

// replace gives slot i to key with bucket b and moves it to the front.
func (t *table) replace(i int32, key netip.Prefix, b bucket) {
	delete(t.index, t.entries[i].key)
	e := &t.entries[i]
	e.key, e.bucket, e.inflight, e.held = key, b, 0, 0
	t.index[key] = i
	t.toFront(i)
}

func (t *table) toFront(i int32) {
	if t.head == i {
		return
	}
	t.unlink(i)
	t.linkFront(i)
}

func (t *table) unlink(i int32) {
	e := &t.entries[i]
	if e.prev >= 0 {
		t.entries[e.prev].next = e.next
	} else {
		t.head = e.next
	}
	if e.next >= 0 {
		t.entries[e.next].prev = e.prev
	} else {
		t.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (t *table) linkFront(i int32) {
	e := &t.entries[i]
	e.prev, e.next = -1, t.head
	if t.head >= 0 {
		t.entries[t.head].prev = i
	}
	t.head = i
	if t.tail < 0 {
		t.tail = i
	}
}
