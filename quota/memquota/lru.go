package memquota

import (
	"time"

	"github.com/admitgo/admit/quota"
)

// bucketKey identifies one bucket: a rule's name and algorithm, and a
// subject. A fixed-window rule and a GCRA rule of the same name count apart.
type bucketKey struct {
	name    string
	subject string
	alg     quota.Algorithm
}

// bucket is one subject's state under one rule.
type bucket struct {
	key        bucketKey
	prev, next *bucket // in lru order

	// FixedWindow: the window counted and its count.
	start time.Time
	count int64
	// GCRA: the theoretical arrival time.
	tat time.Time

	// expires is when the bucket decides like one never seen, so it can be
	// dropped without changing any decision.
	expires time.Time
}

// lru holds buckets by key in least-recently-used order. It has no lock: its
// owner locks.
type lru struct {
	items map[bucketKey]*bucket
	root  bucket // root.next is the most recently used, root.prev the least
}

func newLRU() *lru {
	l := &lru{items: make(map[bucketKey]*bucket)}
	l.root.next, l.root.prev = &l.root, &l.root
	return l
}

func (l *lru) len() int { return len(l.items) }

// get returns the bucket for k, or nil, and marks it most recently used.
func (l *lru) get(k bucketKey) *bucket {
	b := l.items[k]
	if b != nil && l.root.next != b {
		l.unlink(b)
		l.pushFront(b)
	}
	return b
}

// add inserts b, whose key is not yet present, as the most recently used.
func (l *lru) add(b *bucket) {
	l.items[b.key] = b
	l.pushFront(b)
}

// oldest returns the least recently used bucket, or nil when empty.
func (l *lru) oldest() *bucket {
	if l.root.prev == &l.root {
		return nil
	}
	return l.root.prev
}

func (l *lru) remove(b *bucket) {
	delete(l.items, b.key)
	l.unlink(b)
}

func (l *lru) unlink(b *bucket) {
	b.prev.next = b.next
	b.next.prev = b.prev
	b.prev, b.next = nil, nil
}

func (l *lru) pushFront(b *bucket) {
	b.prev = &l.root
	b.next = l.root.next
	l.root.next.prev = b
	l.root.next = b
}
