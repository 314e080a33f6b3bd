package admit

import (
	"math"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/quota"
)

// group holds one group's budget and state. One mutex guards all of it, so
// the caps and the eviction rule are exact; the critical section does no I/O
// and allocates nothing once the table has grown.
type group struct {
	name   Group
	budget Budget
	client refill
	shared refill
	rule   quota.Rule // the shared store's rule, when budget.Store is set
	meters *groupMeters
	policy string // the RateLimit-Policy field value
	store  storeState

	mu         sync.Mutex // guards the following
	inflight   int
	perClient  map[netip.Prefix]int32 // in-flight requests per client; no zero entries
	table      table
	sharedB    bucket
	sharedHeld int32 // tokens held on the shared bucket by unsettled requests
}

func newGroup(name Group, b Budget, now int64) *group {
	g := &group{name: name, budget: b, meters: newGroupMeters(name)}
	g.client, g.shared = b.refills()
	g.policy = `"` + string(name) + `";q=` + strconv.Itoa(b.Burst) + `;w=` +
		strconv.Itoa(int(math.Ceil(float64(b.Burst)/(g.client.perNano*1e9))))
	if b.Store != nil {
		g.rule = b.rule(name)
		g.store.logs = rate.Sometimes{Interval: 10 * time.Second}
	}
	g.perClient = make(map[netip.Prefix]int32)
	g.table = newTable(b.MaxClients)
	g.sharedB = g.shared.full(now)
	return g
}

// ticket records what admission took, so settle gives back exactly that.
type ticket struct {
	key   netip.Prefix
	slot  int32 // client table slot, or -1 for the shared bucket
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

// admit runs the admission steps in order under the group mutex: the group
// cap, the client cap, then (without a shared store) the token check. A
// request it admits has taken its slots and, by charging or holding, its
// token. In shadow mode a request that would be rejected is admitted without
// taking anything, and its outcome says what enforcement would have done.
func (g *group) admit(key netip.Prefix, now int64, shadow, headers bool) (ticket, verdict) {
	t := ticket{key: key, slot: -1}
	var v verdict
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight >= g.budget.Inflight {
		return t, g.reject(OutcomeGroupConcurrency, 1, shadow)
	}
	prior := g.perClient[key]
	if int(prior) >= g.budget.PerClient {
		return t, g.reject(OutcomeClientConcurrency, 1, shadow)
	}
	t.prior = prior
	if g.budget.Store == nil {
		b, f, held := g.bucketFor(&t, &v, now)
		need := 1.0
		if g.budget.ChargeOnFailure {
			need += float64(*held)
		}
		tokens := b.tokensAt(now, f)
		if tokens < need {
			w := g.reject(OutcomeRateLimited, b.secondsUntil(now, need, f), shadow)
			w.evicted = v.evicted
			if headers {
				w.reset = f.seconds(f.burst - tokens + need - 1)
			}
			return t, w
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
	}
	g.inflight++
	g.perClient[key] = prior + 1
	t.taken = true
	return t, v
}

// reject returns the verdict for a rejection, or for its shadow form.
func (g *group) reject(o Outcome, retry int, shadow bool) verdict {
	if shadow {
		return verdict{outcome: o.would()}
	}
	return verdict{outcome: o, retry: retry}
}

// bucketFor returns the bucket the client spends from, its refill, and its
// held-token counter: the client's table entry, a new or reclaimed one, or the
// shared bucket when the table is full and no probed entry can be reclaimed.
func (g *group) bucketFor(t *ticket, v *verdict, now int64) (*bucket, refill, *int32) {
	slot, ok := g.table.lookup(t.key)
	if !ok {
		slot, v.evicted = g.claimLocked(t.key, now)
	}
	t.slot = slot
	if slot < 0 {
		return &g.sharedB, g.shared, &g.sharedHeld
	}
	e := &g.table.entries[slot]
	return &e.bucket, g.client, &e.held
}

// claimLocked finds a slot for a client the table does not hold. On a full
// table it probes the oldest entries: each that cannot be reclaimed moves to
// the front, and the first that is full and idle is given to the newcomer with
// a full bucket. It returns -1 when none qualifies.
func (g *group) claimLocked(key netip.Prefix, now int64) (slot int32, evicted bool) {
	if !g.table.full() {
		return g.table.insert(key, g.client.full(now)), false
	}
	for range min(probes, g.table.len()) {
		i := g.table.tail
		e := &g.table.entries[i]
		if e.held == 0 && g.perClient[e.key] == 0 && e.bucket.tokensAt(now, g.client) >= g.client.burst {
			g.table.replace(i, key, g.client.full(now))
			return i, true
		}
		g.table.toFront(i)
	}
	return -1, false
}

// release gives back the slots of an admitted request without settling a
// token; a shared store's refusal uses it.
func (g *group) release(t *ticket) {
	g.mu.Lock()
	g.releaseLocked(t)
	g.mu.Unlock()
}

func (g *group) releaseLocked(t *ticket) {
	if !t.taken {
		return
	}
	t.taken = false
	g.inflight--
	if n := g.perClient[t.key] - 1; n > 0 {
		g.perClient[t.key] = n
	} else {
		delete(g.perClient, t.key)
	}
}

// settle ends an admitted request: it frees its slots and, for a request
// holding a token, spends it when the answer was a 4xx. It reads the clock
// only to spend.
func (g *group) settle(t *ticket, status int, now func() time.Time) {
	if !t.taken {
		return
	}
	charge := status >= 400 && status < 500
	g.mu.Lock()
	g.releaseLocked(t)
	if t.held {
		b, f, held := &g.sharedB, g.shared, &g.sharedHeld
		if t.slot >= 0 {
			e := &g.table.entries[t.slot]
			b, f, held = &e.bucket, g.client, &e.held
		}
		*held--
		if charge {
			b.spend(now().UnixNano(), 1, f)
		}
	}
	g.mu.Unlock()
}

// stats returns the in-flight count and the table size for the gauges.
func (g *group) stats() (inflight, clients int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight, g.table.len()
}
