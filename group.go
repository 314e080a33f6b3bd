package admit

import (
	"context"
	"hash/maphash"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// group holds one group's budget, its in-flight counts and the engine that
// decides its tokens. Client state is split into shards by key, each behind
// its own mutex, so requests of different clients rarely wait for each other;
// a client always lands in the same shard, so its caps and its bucket stay
// exact. The group's in-flight count is one atomic counter, taken only when
// the request is otherwise admitted, so the group cap is never exceeded. No
// critical section does I/O or allocates once the tables have grown.
type group struct {
	name    Group
	budget  Budget // resolved: every field set
	set     *settings
	engine  engine
	keyKind keyKind
	// authorization marks a key by the Authorization header, whose scheme
	// is read without case.
	authorization bool
	meters        *groupMeters
	fields        *fieldValues   // the rate-limit fields
	bodies        map[int][]byte // the refusal bodies, by status
	answer        refusalAnswer  // the answer of refusals with Retry-After
	// writtenAsIs: the name holds no CR or LF, so its header values go out
	// as they are, and a refusal's fields can be written without the
	// header map (see appendRefusalFields).
	writtenAsIs bool
	exemptions  exemptions
	shards      []shard
	shardMask   uint32
	seed        maphash.Seed // of the shard hash

	inflight atomic.Int64 // admitted and not settled; at most budget.Inflight
	overflow atomic.Int64 // over budget and served by the overflow handler; at most budget.Inflight
	buffered atomic.Int64 // bytes held by the bodies of buffered requests still arriving; at most bufferBound
	waiting  atomic.Int64 // requests waiting for a token they reserved; at most budget.MaxWaiting
}

// An engine decides a group's tokens, and with them its caps: the door's own
// buckets (local) or a shared store (shared). A group picks one in New.
// Tickets travel by value, so that the hot path's call through the
// interface does not move them to the heap.
type engine interface {
	// admit checks the client cap and the client's tokens and takes the
	// group's slot, or refuses; a request it admits has taken its slots and,
	// by charging or holding, its t.cost tokens, as it records in t.
	admit(ctx context.Context, t *ticket, now int64) verdict
	// cancel undoes an admission that a later limit of the same route
	// refused: it frees the slots and gives the tokens back, so that one
	// limit's refusal spends no other limit's budget.
	cancel(ctx context.Context, t *ticket)
	// settle ends an admitted request: it frees its slots and, for a request
	// holding tokens, spends them when the answer was a 4xx.
	settle(ctx context.Context, t *ticket, status int)
}

// shard is one part of a group's client state.
type shard struct {
	mu    sync.Mutex // guards table, perClient and held
	table table      // at most the shard's share of MaxClients; empty with a shared store
	// perClient counts the requests in flight of clients without a table
	// entry (those on the shared bucket, and every client of a group with a
	// shared store); it holds no zero counts. A client with an entry keeps
	// its count there.
	perClient map[netip.Prefix]int32
	// held counts the tokens held by unsettled charge-on-failure requests
	// of each client of a group with a shared store; nil otherwise.
	held   map[netip.Prefix]int32
	counts counts   // outcomes of requests keyed to this shard
	_      [64]byte // keeps neighbouring shards off one cache line
}

// inflightLocked looks key up in s's table, and returns its entry's slot
// (-1: none) and the requests key has in flight, counted on its entry or,
// for a key without one, in perClient.
func (s *shard) inflightLocked(key netip.Prefix) (slot, inflight int32) {
	slot, tabled := s.table.Lookup(key)
	if !tabled {
		return -1, s.perClient[key]
	}
	return slot, s.table.At(slot).inflight
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

func newGroup(name Group, b Budget, set *settings, now int64) *group {
	g := &group{name: name, budget: b, set: set, meters: newGroupMeters(name), keyKind: b.Key.kind(), bodies: refusalBodies(name, b),
		authorization: http.CanonicalHeaderKey(b.Key.Header) == "Authorization"}
	client, _ := b.refills()
	w := client.seconds(client.burst)
	if client.fixed {
		w = ceilNanos(client.window)
	}
	policy := `"` + string(name) + `";q=` + strconv.Itoa(b.Burst) + `;w=` + strconv.Itoa(w)
	g.fields = newFieldValues(name, b, policy, b.FieldsOnAdmitted || set.headers)
	g.writtenAsIs = !strings.ContainsAny(string(name), "\r\n")
	g.answer = newRefusalAnswer(name, b, func(o outcome) int { return g.refusalStatus(verdict{outcome: o}) })
	g.exemptions = newExemptions(b)
	n := shardsFor(b.MaxClients)
	g.shards = make([]shard, n)
	g.shardMask = uint32(n - 1)
	g.seed = maphash.MakeSeed()
	shared := b.decidesOnStore()
	for i := range g.shards {
		size := 0
		if !shared {
			size = b.MaxClients / n
			if i < b.MaxClients%n {
				size++
			}
		}
		g.shards[i].table = newTable(size)
		g.shards[i].perClient = make(map[netip.Prefix]int32)
		if shared && b.Charge == ChargeOnFailure {
			g.shards[i].held = make(map[netip.Prefix]int32)
		}
	}
	if shared {
		e := newShared(g, now)
		if b.Replicas > 0 {
			// The fallback's shards line up with the group's, so a ticket's
			// shard is the same in both. Its settings read the fallback's
			// own clock, for what it spends or refunds when a request
			// settles.
			fset := *set
			fset.now = func() int64 { return e.fallbackNow(set.now()) }
			fb := newGroup(name, b.fallback(), &fset, now)
			fb.seed = g.seed
			e.fallback = fb
		}
		g.engine = e
	} else {
		g.engine = newLocal(g, now)
	}
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
	cost  int32 // the tokens the request spends
	taken bool  // holds an in-flight slot of the client and, unless unslotted, of the group
	// unslotted marks a request admitted without the group's slot, which
	// it takes once its body has arrived (Route.Buffer).
	unslotted bool
	// held marks a request that holds a token until it settles (charge on
	// failure): on the door's own bucket at slot, or on the shared store.
	held bool
	// slot is the request's client table slot in its shard; -1 for the
	// shared bucket. The local engine only.
	slot int32
	// fallback marks a request of a group with a store that its local
	// fallback admitted: slot and held then refer to the fallback's buckets.
	fallback bool
	// uncounted marks a request its store's failure policy admitted: the
	// store did not answer, so there is nothing of it to refund there.
	uncounted bool
	// exempt marks a request its group exempts: it holds the group's slot
	// alone (see admitExempt).
	exempt bool
	// reserved marks a request that spent its tokens ahead, into its
	// key's debt, to wait for them (Budget.Queue): once it has waited,
	// admission takes its slots without spending again, and undoing it
	// gives the tokens back. It lasts from one pass of admitAll to the
	// next, so admit keeps it.
	reserved bool
}

// verdict is the result of admission.
type verdict struct {
	admitted bool    // the request goes on to the handler
	outcome  outcome // ok for a plain admission; the refusal, its would_* form, or store_error otherwise
	retry    int     // Retry-After seconds, for a refusal
	evicted  bool    // a table entry was replaced for this client
	wait     int64   // nanoseconds to wait for the tokens reserved, for a request not admitted yet (outcome delayed)
	// left and reset are the RateLimit header's r and t, filled only when
	// asked for.
	left, reset int
}

// admit runs admission of a request under key, recording it in t: the
// group cap, quickly, then the engine's exact caps and token check.
// With unslotted the request takes no group slot yet (see takeSlotFor).
func (g *group) admit(ctx context.Context, key netip.Prefix, cost int32, now int64, unslotted bool, t *ticket) verdict {
	*t = ticket{key: key, shard: g.shardOf(key), cost: cost, slot: -1, unslotted: unslotted, reserved: t.reserved}
	if g.inflight.Load() >= int64(g.budget.Inflight) {
		return g.refusal(outcomeGroupConcurrency, 1)
	}
	return g.engine.admit(ctx, t, now)
}

// refusal returns the verdict for a refusal, or, in shadow mode, for
// admission with the refusal's would_* outcome.
func (g *group) refusal(o outcome, retry int) verdict {
	if g.set.shadow {
		return verdict{admitted: true, outcome: o.would()}
	}
	return verdict{outcome: o, retry: retry}
}

// takeSlot takes one of the group's in-flight slots, if one is free.
func (g *group) takeSlot() bool {
	return takeUpTo(&g.inflight, int64(g.budget.Inflight))
}

// takeSlotFor takes the group's slot for a request being admitted, or,
// for one that takes it once its body has arrived, nothing yet.
func (g *group) takeSlotFor(t *ticket) bool {
	return t.unslotted || g.takeSlot()
}

// takeOverflow takes one of the group's overflow slots, if one is free: the
// overflow handler serves at most Inflight requests at once, so over-budget
// requests cannot make the process buffer more than admitted ones can.
func (g *group) takeOverflow() bool {
	return takeUpTo(&g.overflow, int64(g.budget.Inflight))
}

// takeUpTo adds one to n unless it is at limit already.
func takeUpTo(n *atomic.Int64, limit int64) bool {
	for {
		v := n.Load()
		if v >= limit {
			return false
		}
		if n.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// releaseLocked gives back the slots of an admitted request. The caller
// holds s.mu.
func (g *group) releaseLocked(s *shard, t *ticket) {
	if !t.taken {
		return
	}
	t.taken = false
	if !t.unslotted {
		g.inflight.Add(-1)
	}
	// An entry with requests in flight is never reclaimed, so the slot the
	// request was admitted through still belongs to its client; a client
	// admitted through the shared bucket may have gained an entry since.
	slot, tabled := t.slot, t.slot >= 0
	if !tabled {
		slot, tabled = s.table.Peek(t.key)
	}
	if tabled {
		s.table.At(slot).inflight--
		return
	}
	if n := s.perClient[t.key] - 1; n > 0 {
		s.perClient[t.key] = n
	} else {
		delete(s.perClient, t.key)
	}
}

// count records one request's outcome on the shard of its client.
func (g *group) count(t *ticket, o outcome) {
	g.shards[t.shard].counts.outcomes[o].Add(1)
}

// stats returns the in-flight count, the table size and the summed counts
// for the metrics callback.
func (g *group) stats() (inflight, clients int, outcomes [numOutcomes]int64, evictions int64) {
	for i := range g.shards {
		s := &g.shards[i]
		s.mu.Lock()
		clients += s.table.Len()
		s.mu.Unlock()
		for o := range numOutcomes {
			outcomes[o] += s.counts.outcomes[o].Load()
		}
		evictions += s.counts.evictions.Load()
	}
	return int(g.inflight.Load()), clients, outcomes, evictions
}
