package admit

import (
	"hash/maphash"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/quota"
)

// group holds one group's budget and state. The client table and per-client
// in-flight counts are split into shards by key, each behind its own mutex,
// so requests of different clients rarely wait for each other; a client
// always lands in the same shard, so its caps and its bucket stay exact. The
// group's in-flight count is one atomic counter, taken only when the request
// is otherwise admitted, so the group cap is never exceeded. The shared
// bucket has its own mutex, taken after a shard's. No critical section does
// I/O or allocates once the tables have grown.
type group struct {
	name      Group
	budget    Budget
	client    refill
	shared    refill
	rule      quota.Rule // the shared store's rule, when budget.Store is set
	meters    *groupMeters
	policy    string // the RateLimit-Policy field value
	store     storeState
	shards    []shard
	shardMask uint32
	seed      maphash.Seed // of the shard hash

	inflight atomic.Int64 // admitted and not settled; at most budget.Inflight
	overflow atomic.Int64 // over budget and served by the overflow handler; at most budget.Inflight

	sharedMu   sync.Mutex // guards the following
	sharedB    bucket
	sharedHeld int32 // tokens held on the shared bucket by unsettled requests
}

// shard is one part of a group's client state.
type shard struct {
	mu    sync.Mutex // guards table and perClient
	table table      // at most the shard's share of MaxClients
	// perClient counts the requests in flight of clients without a table
	// entry (those on the shared bucket, and every client of a group with a
	// shared store); it holds no zero counts. A client with an entry keeps
	// its count there.
	perClient map[netip.Prefix]int32
	counts    counts   // outcomes of requests keyed to this shard
	_         [64]byte // keeps neighbouring shards off one cache line
}

// shardsFor returns how many shards a table of maxClients entries gets: one
// for small tables, so they follow a single exact LRU order, and 16 (a power
// of two) from 1,024 entries up.
func shardsFor(maxClients int) int {
	if maxClients < 1024 {
		return 1
	}
	return 16
}

func newGroup(name Group, b Budget, now int64) *group {
	g := &group{name: name, budget: b, meters: newGroupMeters(name)}
	g.client, g.shared = b.refills()
	g.policy = `"` + string(name) + `";q=` + strconv.Itoa(b.Burst) + `;w=` +
		strconv.Itoa(g.client.seconds(g.client.burst))
	if b.Store != nil {
		g.rule = b.rule(name)
		g.store.logs = rate.Sometimes{Interval: 10 * time.Second}
	}
	n := shardsFor(b.MaxClients)
	g.shards = make([]shard, n)
	g.shardMask = uint32(n - 1)
	g.seed = maphash.MakeSeed()
	for i := range g.shards {
		size := b.MaxClients / n
		if i < b.MaxClients%n {
			size++
		}
		g.shards[i].table = newTable(size)
		g.shards[i].perClient = make(map[netip.Prefix]int32)
	}
	g.sharedB = g.shared.full(now)
	return g
}

// shardOf returns the index of the shard that holds key. The hash is seeded
// per group at random, so nobody outside the process can choose keys that
// land in one shard and pin it at a sixteenth of the whole table's price.
func (g *group) shardOf(key netip.Prefix) uint32 {
	if g.shardMask == 0 {
		return 0
	}
	return uint32(maphash.Comparable(g.seed, key)) & g.shardMask
}

// ticket records what admission took, so settle gives back exactly that.
type ticket struct {
	key   netip.Prefix
	shard uint32
	slot  int32 // client table slot in the shard, or -1 for the shared bucket
	taken bool  // holds an in-flight slot of the client and of the group
	held  bool  // holds a token of the door's own buckets until settled
	// storeHeld marks a charge-on-failure request decided by a shared store:
	// a 4xx answer charges the store.
	storeHeld bool
	// prior is how many requests of the client were in flight before this
	// one; a shared store's charge-on-failure check needs it.
	prior int32
}

// verdict is the result of admission.
type verdict struct {
	outcome Outcome // OutcomeOK when admitted
	retry   int     // Retry-After seconds, for a rejection
	evicted bool    // a table entry was replaced for this client
	// left and reset are the RateLimit header's r and t, filled only when
	// asked for.
	left, reset int
}

// admit runs the admission steps in order: the group cap, the client cap,
// then (without a shared store) the token check. A request it admits has
// taken its slots and, by charging or holding, its token. In shadow mode a
// request that would be rejected is admitted without taking anything, and its
// outcome says what enforcement would have done.
func (g *group) admit(key netip.Prefix, now int64, shadow, headers bool) (ticket, verdict) {
	t := ticket{key: key, shard: g.shardOf(key), slot: -1}
	var v verdict
	if g.inflight.Load() >= int64(g.budget.Inflight) {
		return t, g.reject(OutcomeGroupConcurrency, 1, shadow)
	}
	s := &g.shards[t.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, tabled := int32(-1), false
	if g.budget.Store == nil {
		slot, tabled = s.table.lookup(key)
	}
	prior := s.perClient[key]
	if tabled {
		prior = s.table.entries[slot].inflight
	}
	if int(prior) >= g.budget.PerClient {
		return t, g.reject(OutcomeClientConcurrency, 1, shadow)
	}
	t.prior = prior
	if g.budget.Store != nil {
		if !g.takeSlot() {
			return t, g.reject(OutcomeGroupConcurrency, 1, shadow)
		}
	} else {
		if !tabled {
			slot, v.evicted = g.claimLocked(s, key, now)
		}
		t.slot = slot
		if w, ok := g.spendLocked(s, &t, &v, now, shadow, headers); !ok {
			return t, w
		}
	}
	if slot >= 0 {
		s.table.entries[slot].inflight++
	} else {
		s.perClient[key] = prior + 1
	}
	t.taken = true
	return t, v
}

// takeSlot takes one of the group's in-flight slots, if one is free.
func (g *group) takeSlot() bool {
	for {
		n := g.inflight.Load()
		if n >= int64(g.budget.Inflight) {
			return false
		}
		if g.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// takeOverflow takes one of the group's overflow slots, if one is free: the
// overflow handler serves at most Inflight requests at once, so over-budget
// requests cannot make the process buffer more than admitted ones can.
func (g *group) takeOverflow() bool {
	for {
		n := g.overflow.Load()
		if n >= int64(g.budget.Inflight) {
			return false
		}
		if g.overflow.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// spendLocked checks the tokens of the client's bucket (its table entry at
// t.slot, or the shared bucket) and, when they suffice and a group slot is
// free, takes the slot and spends (or holds) a token. It returns the
// rejection verdict and false otherwise. The caller holds s.mu.
func (g *group) spendLocked(s *shard, t *ticket, v *verdict, now int64, shadow, headers bool) (verdict, bool) {
	b, f, held := &g.sharedB, g.shared, &g.sharedHeld
	if t.slot >= 0 {
		e := &s.table.entries[t.slot]
		b, f, held = &e.bucket, g.client, &e.held
	} else {
		g.sharedMu.Lock()
		defer g.sharedMu.Unlock()
	}
	need := 1.0
	if g.budget.ChargeOnFailure && !f.unlimited() {
		need += float64(*held)
	}
	tokens := b.tokensAt(now, f)
	if tokens < need {
		w := g.reject(OutcomeRateLimited, b.secondsUntil(now, need, f), shadow)
		w.evicted = v.evicted
		if headers {
			w.reset = f.seconds(f.burst - tokens + need - 1)
		}
		return w, false
	}
	if !g.takeSlot() {
		w := g.reject(OutcomeGroupConcurrency, 1, shadow)
		w.evicted = v.evicted
		return w, false
	}
	if g.budget.ChargeOnFailure {
		*held++
		t.held = true
	} else {
		b.spend(now, 1, f)
	}
	if headers {
		v.left = int(math.Floor(tokens - need))
		v.reset = f.seconds(f.burst - tokens + need)
	}
	return *v, true
}

// reject returns the verdict for a rejection, or for its shadow form.
func (g *group) reject(o Outcome, retry int, shadow bool) verdict {
	if shadow {
		return verdict{outcome: o.would()}
	}
	return verdict{outcome: o, retry: retry}
}

// claimLocked finds a slot for a client its shard's table does not hold. On a
// full table it probes the oldest entries: each that cannot be reclaimed
// moves to the front, and the first that is full and idle is given to the
// newcomer with a full bucket. It returns -1 when none qualifies. The
// newcomer's requests in flight on the shared bucket, if any, are counted on
// its entry from then on. The caller holds s.mu.
func (g *group) claimLocked(s *shard, key netip.Prefix, now int64) (slot int32, evicted bool) {
	slot = -1
	if !s.table.full() {
		slot = s.table.insert(key, g.client.full(now))
	} else {
		for range min(probes, s.table.len()) {
			i := s.table.tail
			e := &s.table.entries[i]
			if e.inflight == 0 && e.bucket.tokensAt(now, g.client) >= g.client.burst {
				s.table.replace(i, key, g.client.full(now))
				slot, evicted = i, true
				break
			}
			s.table.toFront(i)
		}
	}
	if n, ok := s.perClient[key]; ok && slot >= 0 {
		s.table.entries[slot].inflight = n
		delete(s.perClient, key)
	}
	return slot, evicted
}

// release gives back the slots of an admitted request without settling a
// token; a shared store's refusal uses it.
func (g *group) release(t *ticket) {
	s := &g.shards[t.shard]
	s.mu.Lock()
	g.releaseLocked(s, t)
	s.mu.Unlock()
}

func (g *group) releaseLocked(s *shard, t *ticket) {
	if !t.taken {
		return
	}
	t.taken = false
	g.inflight.Add(-1)
	// An entry with requests in flight is never reclaimed, so the slot the
	// request was admitted through still belongs to its client; a client
	// admitted through the shared bucket may have gained an entry since.
	slot, tabled := t.slot, t.slot >= 0
	if !tabled {
		slot, tabled = s.table.index[t.key]
	}
	if tabled {
		s.table.entries[slot].inflight--
		return
	}
	if n := s.perClient[t.key] - 1; n > 0 {
		s.perClient[t.key] = n
	} else {
		delete(s.perClient, t.key)
	}
}

// settle ends an admitted request: it frees its slots and, for a request
// holding a token, spends it when the answer was a 4xx. It reads the clock
// only to spend.
func (g *group) settle(t *ticket, status int, now func() int64) {
	if !t.taken {
		return
	}
	charge := status >= 400 && status < 500
	s := &g.shards[t.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	g.releaseLocked(s, t)
	if !t.held {
		return
	}
	if t.slot >= 0 {
		e := &s.table.entries[t.slot]
		e.held--
		if charge {
			e.bucket.spend(now(), 1, g.client)
		}
		return
	}
	g.sharedMu.Lock()
	g.sharedHeld--
	if charge {
		g.sharedB.spend(now(), 1, g.shared)
	}
	g.sharedMu.Unlock()
}

// count records one request's outcome on the shard of its client.
func (g *group) count(t *ticket, o Outcome) {
	g.shards[t.shard].counts.outcomes[o].Add(1)
}

// stats returns the in-flight count, the table size and the summed counts
// for the metrics callback.
func (g *group) stats() (inflight, clients int, outcomes [numOutcomes]int64, evictions int64) {
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		clients += s.table.len()
		s.mu.Unlock()
		for o := range numOutcomes {
			outcomes[o] += s.counts.outcomes[o].Load()
		}
		evictions += s.counts.evictions.Load()
	}
	return int(g.inflight.Load()), clients, outcomes, evictions
}
