package admit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/storedown"
	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
)

// outage is a shared store that fails by its policy (closed unless set)
// while down is set, and counts the calls it gets.
type outage struct {
	quota.Charger
	policy quota.Failure
	down   atomic.Bool
	calls  atomic.Int64
}

var errOutage = errors.New("store unreachable")

func (o *outage) AllowN(ctx context.Context, r quota.Rule, s string, n int) (quota.Decision, error) {
	o.calls.Add(1)
	if o.down.Load() {
		return o.policy.Fail(r, errOutage)
	}
	return o.Charger.AllowN(ctx, r, s, n)
}

func (o *outage) Allow(ctx context.Context, r quota.Rule, s string) (quota.Decision, error) {
	return o.AllowN(ctx, r, s, 1)
}

// fallbackReplicas returns n doors sharing one store that can fail, each
// with the local fallback on for budget b of group g.
func fallbackReplicas(t *testing.T, clk *testclock.Clock, g Group, b Budget, n int) ([]http.Handler, []*Door, *outage) {
	t.Helper()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := &outage{Charger: mem}
	b.Store, b.Replicas = store, n
	var hs []http.Handler
	var doors []*Door
	for range n {
		d := newDoor(t, clk, Config{Budgets: map[Group]Budget{g: b}})
		doors = append(doors, d)
		hs = append(hs, d.Wrap(g, status(http.StatusOK), nil))
	}
	return hs, doors, store
}

// TestFallbackHoldsTheBudgetThroughAnOutage spends a budget through the
// store, fails the store for ten seconds while three replicas are hammered,
// and brings it back: across the outage the replicas together admit at
// most what one store would have (the budget for the time, which their
// shares add up to) plus one burst (the store's, spent just before), each
// admission during the outage counts as fallback, the store is asked only
// by the probes, and once it answers the store decides again.
func TestFallbackHoldsTheBudgetThroughAnOutage(t *testing.T) {
	clk := newClock()
	const replicas = 3
	b := Budget{Rate: 10, Burst: 20}
	hs, doors, store := fallbackReplicas(t, clk, GroupLink, b, replicas)
	send := func(perReplica int) (admitted int) {
		for _, h := range hs {
			for range perReplica {
				if do(h, "GET", "198.51.100.7:1000").Code == http.StatusOK {
					admitted++
				}
			}
		}
		return admitted
	}
	if got := send(20); got != b.Burst {
		t.Fatalf("store up: %d admitted, want the burst, %d", got, b.Burst)
	}

	store.down.Store(true)
	before := store.calls.Load()
	const outage = 10 * time.Second
	step := 100 * time.Millisecond
	during := 0
	for elapsed := time.Duration(0); elapsed < outage; elapsed += step {
		during += send(5)
		clk.Advance(step)
	}
	// The budget for ten seconds is the refill plus one burst: the
	// replicas' shares, each starting full, add up to no more.
	refill := int(float64(b.Rate) * outage.Seconds())
	if during > refill+b.Burst {
		t.Errorf("during the outage: %d admitted, want at most %d (the refill) + %d (one burst)", during, refill, b.Burst)
	}
	if during < refill {
		t.Errorf("during the outage: %d admitted, want at least the refill, %d", during, refill)
	}
	var fallback int64
	for _, d := range doors {
		fallback += outcomeCount(d.groups[GroupLink], outcomeFallback)
	}
	if fallback != int64(during) {
		t.Errorf("fallback outcomes: got %d, want %d (every admission during the outage)", fallback, during)
	}
	// Each replica asks once on the failure, then probes once an interval.
	if asked, most := store.calls.Load()-before, int64(replicas*(1+int(int64(outage)/storedown.Every)+1)); asked > most {
		t.Errorf("store calls during the outage: %d, want at most %d (a probe an interval per replica)", asked, most)
	}

	// Back, the store decides again; its bucket, charged nothing during
	// the outage, is full.
	store.down.Store(false)
	clk.Advance(time.Second) // the next probe is due
	afterCalls := store.calls.Load()
	if got := send(10); got != b.Burst {
		t.Errorf("store back: %d admitted, want the store's burst, %d", got, b.Burst)
	}
	if got := store.calls.Load() - afterCalls; got != replicas*10 {
		t.Errorf("store back: %d calls reached it, want all %d", got, replicas*10)
	}
	for _, d := range doors {
		assertIdle(t, d.groups[GroupLink])
		assertIdle(t, d.groups[GroupLink].engine.(*shared).fallback)
	}
}

// TestFallbackChargesOnFailure keeps a webhook's rule on the fallback: a
// client's 4xx answers spend its share, 2xx answers do not.
func TestFallbackChargesOnFailure(t *testing.T) {
	clk := newClock()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := &outage{Charger: mem}
	store.down.Store(true)
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{
		GroupWebhook: {Rate: 1, Burst: 8, Store: store, Replicas: 2},
	}})
	ok := d.Wrap(GroupWebhook, status(http.StatusOK), nil)
	bad := d.Wrap(GroupWebhook, status(http.StatusUnauthorized), nil)
	for range 10 {
		allowed(t, ok, "203.0.113.9:1", http.StatusOK) // 2xx spend nothing, on the fallback too
	}
	for range 4 { // its share of the burst, 8/2
		allowed(t, bad, "203.0.113.9:1", http.StatusUnauthorized)
	}
	rejected(t, bad, "203.0.113.9:1", http.StatusTooManyRequests, "2") // half the rate: a token in 2s
	assertIdle(t, d.groups[GroupWebhook])
	assertIdle(t, d.groups[GroupWebhook].engine.(*shared).fallback)
}

// TestFallbackKeepsTheGroupCaps takes the group's in-flight slots on the
// fallback as on the store: the fallback has no caps of its own to add.
func TestFallbackKeepsTheGroupCaps(t *testing.T) {
	clk := newClock()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := &outage{Charger: mem}
	store.down.Store(true)
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{
		GroupLink: {Rate: 100, Burst: 100, PerClient: 2, Inflight: 3, Store: store, Replicas: 1},
	}})
	first, second := newBlocker(http.StatusOK), newBlocker(http.StatusOK)
	releaseFirst := hold(t, d.Wrap(GroupLink, first, nil), first, "192.0.2.1:1", 2)
	h := d.Wrap(GroupLink, second, nil)
	rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "1") // the client's cap
	releaseSecond := hold(t, h, second, "192.0.2.2:1", 1)
	rejected(t, h, "192.0.2.3:1", http.StatusServiceUnavailable, "1") // the group's cap
	releaseFirst()
	releaseSecond()
	assertIdle(t, d.groups[GroupLink])
	assertIdle(t, d.groups[GroupLink].engine.(*shared).fallback)
	if got := outcomeCount(d.groups[GroupLink], outcomeFallback); got != 3 {
		t.Errorf("fallback outcomes: got %d, want 3", got)
	}
}

func TestFallbackNeedsAStore(t *testing.T) {
	_, err := New(Config{Budgets: map[Group]Budget{GroupLink: {Replicas: 2}}})
	if err == nil || err.Error() != `admit: group "link": Replicas 2, want 0, or with a Store at least 1` {
		t.Errorf("Replicas without a Store: got %v", err)
	}
}

// TestFallbackFlappingStore fails the store for one second in every twenty,
// for 200 s, while one client asks every 50 ms. The fallback's buckets fill
// only while the group decides on them, so each outage does not open with a
// fresh burst: over the whole run the client gets at most the store's
// budget (a burst and the refill) plus the fallback's (a burst and the
// refill for the time spent on it), far from a burst per outage.
func TestFallbackFlappingStore(t *testing.T) {
	clk := newClock()
	b := Budget{Rate: 1, Burst: 20}
	hs, doors, store := fallbackReplicas(t, clk, GroupLink, b, 1)
	const (
		run   = 200 * time.Second
		every = 20 * time.Second
		step  = 50 * time.Millisecond
	)
	admitted, onFallback := 0, time.Duration(0)
	for elapsed := time.Duration(0); elapsed < run; elapsed += step {
		store.down.Store(elapsed%every < time.Second)
		if do(hs[0], "GET", "198.51.100.7:1000").Code == http.StatusOK {
			admitted++
		}
		if doors[0].groups[GroupLink].engine.(*shared).down.Down() {
			onFallback += step
		}
		clk.Advance(step)
	}
	most := 2*b.Burst + int(float64(b.Rate)*(run+onFallback).Seconds())
	if admitted > most {
		t.Errorf("%d admitted over %v with %v on the fallback, want at most %d (two bursts and the refill for the run and the fallback's time)", admitted, run, onFallback, most)
	}
	if fallback := outcomeCount(doors[0].groups[GroupLink], outcomeFallback); fallback == 0 {
		t.Error("no admission counted as fallback: the outages were not seen")
	}
}

// TestFallbackClockStandsStillWhileTheStoreAnswers spends a client's
// fallback bucket, and settles a charge-on-failure request admitted on the
// fallback 1,000 s after the store answered again: its 4xx is charged at
// the fallback's time, which stood still meanwhile, so the next outage
// finds the bucket as empty as the last one left it.
func TestFallbackClockStandsStillWhileTheStoreAnswers(t *testing.T) {
	clk := newClock()
	b := Budget{Rate: 0.01, Burst: 5, Charge: ChargeOnFailure}
	hs, doors, store := fallbackReplicas(t, clk, GroupLink, b, 1)
	e := doors[0].groups[GroupLink].engine.(*shared)
	var h http.Handler
	var slow atomic.Bool
	h = doors[0].Wrap(GroupLink, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.CompareAndSwap(true, false) {
			store.down.Store(false)
			clk.Advance(2 * time.Second)      // the next probe is due
			do(hs[0], "GET", "203.0.113.9:1") // and finds the store answering
			if e.down.Down() {
				t.Error("the store answered, but the group still decides on its fallback")
			}
			clk.Advance(1000 * time.Second)
		}
		w.WriteHeader(http.StatusBadRequest)
	}), nil)
	store.down.Store(true)
	for range 4 {
		do(h, "GET", "198.51.100.7:1")
	}
	slow.Store(true)
	do(h, "GET", "198.51.100.7:1") // the last token, charged 1,000 s after the store came back
	store.down.Store(true)
	admitted := 0
	for range 10 {
		if do(h, "GET", "198.51.100.7:1").Code == http.StatusBadRequest {
			admitted++
		}
	}
	// The fallback's clock ran only the ~2 s of the first outage: at 0.01
	// tokens a second, nothing refilled.
	if admitted != 0 {
		t.Errorf("the next outage admitted %d from a spent fallback bucket, want 0", admitted)
	}
}

// heldStore is a store that, while armed, holds every call until open is
// closed and then fails it, so that many calls fail at once.
type heldStore struct {
	quota.Charger
	down, armed atomic.Bool
	in, open    chan struct{}
}

func (s *heldStore) AllowN(ctx context.Context, r quota.Rule, subject string, n int) (quota.Decision, error) {
	if s.armed.Load() {
		s.in <- struct{}{}
		<-s.open
		return quota.FailClosed.Fail(r, errOutage)
	}
	if s.down.Load() {
		return quota.FailClosed.Fail(r, errOutage)
	}
	return s.Charger.AllowN(ctx, r, subject, n)
}

func (s *heldStore) Allow(ctx context.Context, r quota.Rule, subject string) (quota.Decision, error) {
	return s.AllowN(ctx, r, subject, 1)
}

// TestFallbackClockStartsWithTheOutage fails many calls of one client at
// once, long after its fallback bucket was spent: whichever of them, or of
// the requests after them, reaches the fallback first, it must read the
// fallback's clock as the outage started it, not as it would have run
// while the store answered. Repeated, since the race is in the order the
// calls fail.
func TestFallbackClockStartsWithTheOutage(t *testing.T) {
	for range 1000 {
		clk := newClock()
		mem, err := memquota.New(memquota.Config{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		const n = 16
		store := &heldStore{Charger: mem, in: make(chan struct{}, n), open: make(chan struct{})}
		b := Budget{Rate: 0.001, Burst: 10, PerClient: 1000, Inflight: 1000, Store: store, Replicas: 1}
		d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupLink: b}, Logger: slog.New(slog.DiscardHandler)})
		h := d.Wrap(GroupLink, status(http.StatusOK), nil)
		store.down.Store(true)
		for range 12 { // spend the fallback's bucket
			do(h, "GET", "198.51.100.7:1")
		}
		store.down.Store(false)
		clk.Advance(2 * time.Second)
		do(h, "GET", "203.0.113.9:1") // the store answers again
		clk.Advance(20000 * time.Second)
		store.armed.Store(true)
		var wg sync.WaitGroup
		var admitted atomic.Int64
		for range n {
			wg.Go(func() {
				if do(h, "GET", "198.51.100.7:1").Code == http.StatusOK {
					admitted.Add(1)
				}
			})
		}
		for range n {
			<-store.in
		}
		close(store.open)
		wg.Wait()
		if got := admitted.Load(); got != 0 {
			t.Fatalf("%d admitted from a fallback bucket spent before the store answered for 20,000 s, want 0", got)
		}
	}
}

// TestGroupStateTellsTheFallback: a group on a shared store reports it, and
// reports deciding on its local fallback from the first failed call until
// a call reaches the store again.
func TestGroupStateTellsTheFallback(t *testing.T) {
	clk := newClock()
	hs, doors, store := fallbackReplicas(t, clk, GroupLink, Budget{Rate: 10, Burst: 20}, 1)
	state := func() GroupState {
		st, _ := doors[0].GroupState(GroupLink)
		return st
	}
	do(hs[0], "GET", "198.51.100.7:1000")
	if st := state(); !st.Shared || st.OnFallback {
		t.Fatalf("store up: got %+v, want Shared and not OnFallback", st)
	}
	store.down.Store(true)
	do(hs[0], "GET", "198.51.100.7:1000")
	if st := state(); !st.OnFallback {
		t.Fatalf("store down: got %+v, want OnFallback", st)
	}
	store.down.Store(false)
	clk.Advance(2 * time.Second) // past the probe interval
	do(hs[0], "GET", "198.51.100.7:1000")
	if st := state(); st.OnFallback {
		t.Errorf("store back: got %+v, want not OnFallback", st)
	}
	local := newDoor(t, clk, Config{})
	if st, _ := local.GroupState(GroupLink); st.Shared || st.OnFallback {
		t.Errorf("memory: got %+v, want neither", st)
	}
}

// cancelling is a store that answers, but, as the PostgreSQL and Redis
// stores do, ends a call whose context has ended with that context's error.
type cancelling struct{ *outage }

func (c cancelling) AllowN(ctx context.Context, r quota.Rule, s string, n int) (quota.Decision, error) {
	if err := ctx.Err(); err != nil {
		c.calls.Add(1)
		return quota.Decision{}, err
	}
	return c.outage.AllowN(ctx, r, s, n)
}

// TestClientHangUpIsNoOutage: a store call that ends because its client
// went away (a hang-up timed inside the call) is not the store failing, or
// any client could send the group to its fallback, and its fresh burst,
// once a second: the group stays on its store, and a client that spent its
// budget stays refused.
func TestClientHangUpIsNoOutage(t *testing.T) {
	clk := newClock()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := cancelling{&outage{Charger: mem}}
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupLink: {Rate: 1, Burst: 5, Store: store, Replicas: 1}}})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range 5 {
		allowed(t, h, "198.51.100.7:1", http.StatusOK)
	}
	r := httptest.NewRequest("GET", "/x", nil)
	r.RemoteAddr = "203.0.113.9:1"
	ctx, cancel := context.WithCancel(r.Context())
	cancel()
	h.ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
	before := store.calls.Load()
	for range 3 {
		rejected(t, h, "198.51.100.7:1", http.StatusTooManyRequests, "")
	}
	if n := store.calls.Load() - before; n != 3 {
		t.Errorf("after the hang-up the store was asked %d times for 3 requests, want 3: the group went to its fallback", n)
	}
	assertIdle(t, d.groups[GroupLink])
}
