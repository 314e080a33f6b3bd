// Package lru is the one bounded table under admit's memory: the door's
// client tables and quota/memquota's counters and buckets. A [Table] never
// grows past its capacity and decides nothing about what it may forget: on a
// miss in a full table its owner asks [Table.Victim] for a slot, ranking the
// oldest entries by what forgetting each would cost, and sends the newcomer
// to an overflow of its own when every probed entry must be kept.
package lru

import "iter"

// Table is a fixed-capacity least-recently-used table of values by key. It
// has no lock: its owner locks. Entries live in one slice and link by
// index, so a full table allocates nothing, and a slot (an index) stays
// the same entry's until [Table.Replace] gives it to another key. The zero
// Table is not usable; use [New].
type Table[K comparable, V any] struct {
	max     int
	index   map[K]int32
	entries []entry[K, V]
	head    int32 // most recently used, or -1
	tail    int32 // least recently used, or -1
}

type entry[K comparable, V any] struct {
	key        K
	val        V
	prev, next int32 // toward head and toward tail; -1 at the ends
}

// New returns an empty table that holds at most max entries.
func New[K comparable, V any](max int) Table[K, V] {
	return Table[K, V]{max: max, index: make(map[K]int32), head: -1, tail: -1}
}

// Len returns how many entries t holds.
func (t *Table[K, V]) Len() int { return len(t.entries) }

// Full reports that t holds as many entries as it may.
func (t *Table[K, V]) Full() bool { return len(t.entries) >= t.max }

// Lookup returns the slot of key and moves it to the front.
func (t *Table[K, V]) Lookup(key K) (int32, bool) {
	i, ok := t.index[key]
	if ok {
		t.toFront(i)
	}
	return i, ok
}

// Peek returns the slot of key without moving it.
func (t *Table[K, V]) Peek(key K) (int32, bool) {
	i, ok := t.index[key]
	return i, ok
}

// At returns the value in slot i.
func (t *Table[K, V]) At(i int32) *V { return &t.entries[i].val }

// Key returns the key of slot i.
func (t *Table[K, V]) Key(i int32) K { return t.entries[i].key }

// All yields each key and its value, the most recently used first.
func (t *Table[K, V]) All() iter.Seq2[K, *V] {
	return func(yield func(K, *V) bool) {
		for i := t.head; i >= 0; i = t.entries[i].next {
			if !yield(t.entries[i].key, &t.entries[i].val) {
				return
			}
		}
	}
}

// Insert adds key with value v at the front; t must not be full.
func (t *Table[K, V]) Insert(key K, v V) int32 {
	i := int32(len(t.entries))
	t.entries = append(t.entries, entry[K, V]{key: key, val: v, prev: -1, next: -1})
	t.index[key] = i
	t.linkFront(i)
	return i
}

// Replace gives slot i to key with value v and moves it to the front.
func (t *Table[K, V]) Replace(i int32, key K, v V) {
	delete(t.index, t.entries[i].key)
	e := &t.entries[i]
	e.key, e.val = key, v
	t.index[key] = i
	t.toFront(i)
}

// Probes is how many of the oldest entries the owners of tables examine on
// a miss in a full table before they send the newcomer to their overflow:
// enough that a few kept entries at the cold end do not decide alone, few
// enough that a miss costs little.
const Probes = 8

// Keep is the rank of an entry that must not be forgotten (see
// [Table.Victim]).
const Keep = ^uint64(0)

// Victim examines up to n of the oldest entries and returns the slot whose
// loss rank says costs least, or -1 when every one must be kept. rank
// returns 0 for an entry whose loss changes no decision, which is taken at
// once; [Keep] for one that must not be forgotten, which moves to the front
// so that the next miss examines others; otherwise what forgetting it would
// cost, the cheapest taken after the examination, the others left in place.
// The caller gives the slot to its newcomer with [Table.Replace].
func (t *Table[K, V]) Victim(n int, rank func(*V) uint64) int32 {
	best, bestCost := int32(-1), Keep
	i := t.tail
	for range min(n, len(t.entries)) {
		prev := t.entries[i].prev
		switch c := rank(&t.entries[i].val); {
		case c == 0:
			return i
		case c == Keep:
			t.toFront(i)
		case c < bestCost:
			best, bestCost = i, c
		}
		if i = prev; i < 0 {
			i = t.tail
		}
	}
	return best
}

func (t *Table[K, V]) toFront(i int32) {
	if t.head == i {
		return
	}
	t.unlink(i)
	t.linkFront(i)
}

func (t *Table[K, V]) unlink(i int32) {
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

func (t *Table[K, V]) linkFront(i int32) {
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
