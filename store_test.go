package admit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit/internal/testclock"
	"github.com/admitgo/admit/internal/testredis"
	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
	"github.com/admitgo/admit/quota/redisquota"
)

// replicas returns n doors sharing store for every group, each on clk.
func replicas(t *testing.T, clk *testclock.Clock, store quota.Charger, n int) []*Door {
	t.Helper()
	budgets := DefaultBudgets()
	for g, b := range budgets {
		b.Store = store
		budgets[g] = b
	}
	doors := make([]*Door, n)
	for i := range doors {
		doors[i] = newDoor(t, clk, Config{Budgets: budgets})
	}
	return doors
}

// spread sends n requests from peer round-robin over the doors' group g and
// returns how many the handler saw.
func spread(t *testing.T, doors []*Door, g Group, next http.Handler, peer string, n int) (admitted int) {
	t.Helper()
	hs := make([]http.Handler, len(doors))
	for i, d := range doors {
		hs[i] = d.Wrap(g, next, nil)
	}
	for i := range n {
		switch w := do(hs[i%len(hs)], "GET", peer); w.Code {
		case http.StatusTooManyRequests:
		case http.StatusServiceUnavailable:
			t.Fatalf("request %d: got 503 (%s), want no store failure", i, w.Body)
		default:
			admitted++
		}
	}
	return admitted
}

func TestReplicasShareOneBudget(t *testing.T) {
	stores := map[string]func(t *testing.T, clk *testclock.Clock) quota.Charger{
		"memory": func(t *testing.T, clk *testclock.Clock) quota.Charger {
			m, err := memquota.New(memquota.Config{Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		"redis": func(t *testing.T, clk *testclock.Clock) quota.Charger {
			s, err := redisquota.New(testredis.Client(t), redisquota.Config{Prefix: testredis.Prefix(t), Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Run("link charges every request", func(t *testing.T) {
				clk := newClock()
				doors := replicas(t, clk, open(t, clk), 2)
				if got := spread(t, doors, GroupLink, status(http.StatusOK), "192.0.2.1:1", 2*defaults[GroupLink].Burst); got != defaults[GroupLink].Burst {
					t.Fatalf("admitted across two replicas: got %d, want one burst of %d", got, defaults[GroupLink].Burst)
				}
				rejected(t, doors[0].Wrap(GroupLink, status(http.StatusOK), nil), "192.0.2.1:1", http.StatusTooManyRequests, "1")
				clk.Advance(time.Second)
				allowed(t, doors[1].Wrap(GroupLink, status(http.StatusOK), nil), "192.0.2.1:1", http.StatusOK)
			})
			t.Run("webhook charges only failures", func(t *testing.T) {
				clk := newClock()
				doors := replicas(t, clk, open(t, clk), 2)
				if got := spread(t, doors, GroupWebhook, status(http.StatusOK), "192.0.2.2:1", 2*defaults[GroupWebhook].Burst); got != 2*defaults[GroupWebhook].Burst {
					t.Fatalf("successful deliveries admitted: got %d, want all %d", got, 2*defaults[GroupWebhook].Burst)
				}
				if got := spread(t, doors, GroupWebhook, status(http.StatusUnauthorized), "192.0.2.2:1", defaults[GroupWebhook].Burst+10); got != defaults[GroupWebhook].Burst {
					t.Fatalf("failing deliveries admitted: got %d, want one burst of %d", got, defaults[GroupWebhook].Burst)
				}
			})
		})
	}
}

// TestStackedStoreLimitsRefund stacks a per-address and a per-tenant limit,
// both on a shared store, in both orders and on two replicas: an address
// refused by its own limit leaves the tenant's budget whole, and a second
// address gets exactly what is left of the tenant's, however the replicas
// split the requests. It holds because the store refunds what an earlier
// limit spent.
func TestStackedStoreLimitsRefund(t *testing.T) {
	for _, algorithm := range []Algorithm{TokenBucket, FixedWindow} {
		for _, order := range [][]Group{{"per-address", "tenant"}, {"tenant", "per-address"}} {
			t.Run(fmt.Sprint(algorithm)+"/"+string(order[0]), func(t *testing.T) {
				clk := newClock()
				store, err := redisquota.New(testredis.Client(t), redisquota.Config{Prefix: testredis.Prefix(t), Now: clk.Now})
				if err != nil {
					t.Fatal(err)
				}
				address := Budget{Rate: 1e-3, Burst: 3, PerClient: 100, Inflight: 100, Store: store}
				tenant := Budget{Rate: 1e-3, Burst: 5, PerClient: 100, Inflight: 100, Store: store, Key: Key{PathValue: "tenant", Authenticated: true}}
				if algorithm == FixedWindow {
					address.Rate, address.Burst, address.Algorithm, address.Limit, address.Window = 0, 0, FixedWindow, 3, time.Hour
					tenant.Rate, tenant.Burst, tenant.Algorithm, tenant.Limit, tenant.Window = 0, 0, FixedWindow, 5, time.Hour
				}
				var hs []http.Handler
				for range 2 {
					d := newDoor(t, clk, Config{Budgets: map[Group]Budget{"per-address": address, "tenant": tenant}})
					hs = append(hs, route(t, d, Route{Groups: order}, status(http.StatusOK)))
				}
				sendSpread := func(peer string) (admitted int) {
					for i := range 10 {
						w := httptest.NewRecorder()
						hs[i%2].ServeHTTP(w, tenantReq(peer, "acme"))
						if w.Code == http.StatusOK {
							admitted++
						}
					}
					return admitted
				}
				// A fixed window counts refused requests, so the first
				// address's own limit refuses them all after its 3; they
				// must still leave the tenant's count alone.
				if got := sendSpread("192.0.2.1:1"); got != 3 {
					t.Fatalf("first address: %d admitted, want its own limit, 3", got)
				}
				if got := sendSpread("192.0.2.2:1"); got != 2 {
					t.Fatalf("second address: %d admitted, want what is left of the tenant's, 2", got)
				}
			})
		}
	}
}

// failing is a store whose every decision fails with its policy applied, as
// a store that cannot reach its server does.
type failing struct{ policy quota.Failure }

var errDown = errors.New("store down")

func (f failing) Allow(ctx context.Context, r quota.Rule, s string) (quota.Decision, error) {
	return f.AllowN(ctx, r, s, 1)
}

func (f failing) AllowN(_ context.Context, r quota.Rule, _ string, _ int) (quota.Decision, error) {
	return f.policy.Fail(r, errDown)
}

func (failing) Refund(context.Context, quota.Rule, string, int) error {
	return errors.New("store down")
}

func TestStoreFailureFollowsThePolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy quota.Failure
		shadow bool
		want   int
	}{
		{"fail closed", quota.FailClosed, false, http.StatusServiceUnavailable},
		{"fail open", quota.FailOpen, false, http.StatusOK},
		{"fail closed in shadow mode", quota.FailClosed, true, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := DefaultBudgets()[GroupLink]
			budget.Store = failing{tt.policy}
			d := newDoor(t, newClock(), Config{Shadow: tt.shadow, Budgets: map[Group]Budget{GroupLink: budget}})
			h := d.Wrap(GroupLink, status(http.StatusOK), nil)
			w := do(h, "GET", "192.0.2.1:1")
			if w.Code != tt.want {
				t.Fatalf("got %d, want %d", w.Code, tt.want)
			}
			if tt.want == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
				t.Fatal("fail-closed answer has no Retry-After")
			}
			g := d.groups[GroupLink]
			if got := outcomeCount(g, outcomeStoreError); got != 1 {
				t.Fatalf("store_error count: got %d, want 1", got)
			}
			assertIdle(t, g)
		})
	}
}

// slowCharge wraps a store so that the first 1-token charge blocks until
// released, while looks pass straight through.
type slowCharge struct {
	quota.Charger
	entered, release chan struct{}
	once             sync.Once
}

func (s *slowCharge) AllowN(ctx context.Context, r quota.Rule, subj string, n int) (quota.Decision, error) {
	if n == 1 {
		s.once.Do(func() {
			close(s.entered)
			<-s.release
		})
	}
	return s.Charger.AllowN(ctx, r, subj, n)
}

func TestSharedChargeLandsBeforeTheSlotFrees(t *testing.T) {
	clk := newClock()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := &slowCharge{Charger: mem, entered: make(chan struct{}), release: make(chan struct{})}
	budget := DefaultBudgets()[GroupWebhook]
	budget.Burst, budget.Store = 1, store
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupWebhook: budget}})
	h := d.Wrap(GroupWebhook, status(http.StatusUnauthorized), nil)

	done := make(chan int)
	go func() { done <- do(h, "POST", "192.0.2.1:1").Code }()
	<-store.entered // the first failure is being charged
	rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "1")
	close(store.release)
	if code := <-done; code != http.StatusUnauthorized {
		t.Fatalf("first request: got %d, want 401", code)
	}
	rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "")
}

// panicky is a store that panics, as a buggy custom store might.
type panicky struct{}

func (panicky) Allow(ctx context.Context, r quota.Rule, s string) (quota.Decision, error) {
	panic("store bug")
}

func (panicky) AllowN(ctx context.Context, r quota.Rule, s string, n int) (quota.Decision, error) {
	panic("store bug")
}

func (panicky) Refund(context.Context, quota.Rule, string, int) error { panic("store bug") }

func TestPanickingStoreFreesItsSlot(t *testing.T) {
	budget := DefaultBudgets()[GroupLink]
	budget.Store = panicky{}
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupLink: budget}})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range budget.Inflight + 1 {
		func() {
			defer func() {
				if p := recover(); p != "store bug" {
					t.Fatalf("recovered %v, want the store's panic", p)
				}
			}()
			do(h, "GET", "192.0.2.1:1")
		}()
	}
	assertIdle(t, d.groups[GroupLink])
}

func TestStoreRuleCheckedAtStartup(t *testing.T) {
	store, err := redisquota.New(testredis.Client(t), redisquota.Config{Prefix: testredis.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	budget := DefaultBudgets()[GroupLink]
	budget.Rate, budget.Burst, budget.Store = 0.0001, 1000, store // a window of 116 days
	_, err = New(Config{Budgets: map[Group]Budget{GroupLink: budget}})
	if err == nil || !strings.Contains(err.Error(), `group "link": Rate 0.0001 and Burst 1000`) || !errors.Is(err, quota.ErrRule) {
		t.Fatalf("New: got %v, want a rule error naming the group, its rate and its burst", err)
	}
	fixed := Budget{Algorithm: FixedWindow, Limit: 5, Window: 500 * time.Microsecond, Store: store}
	_, err = New(Config{Budgets: map[Group]Budget{GroupLink: fixed}})
	if err == nil || !strings.Contains(err.Error(), "Limit 5 per Window 500µs") {
		t.Fatalf("New with a fixed window under the store's resolution: got %v, want an error naming its limit and window", err)
	}
	budget.Rate = 1e-300
	if _, err := New(Config{Budgets: map[Group]Budget{GroupLink: budget}}); err == nil {
		t.Fatal("New with a vanishing rate: got no error")
	}
}

// failOpenSwitch is a store that fails open while down is set, as a store
// under quota.FailOpen does when it cannot reach its server, and counts the
// refunds it is sent.
type failOpenSwitch struct {
	quota.Charger
	down    atomic.Bool
	refunds atomic.Int64
}

func (f *failOpenSwitch) AllowN(ctx context.Context, r quota.Rule, s string, n int) (quota.Decision, error) {
	if f.down.Load() {
		return quota.FailOpen.Fail(r, errDown)
	}
	return f.Charger.AllowN(ctx, r, s, n)
}

func (f *failOpenSwitch) Allow(ctx context.Context, r quota.Rule, s string) (quota.Decision, error) {
	return f.AllowN(ctx, r, s, 1)
}

func (f *failOpenSwitch) Refund(ctx context.Context, r quota.Rule, s string, n int) error {
	f.refunds.Add(1)
	return f.Charger.Refund(ctx, r, s, n)
}

// TestFailedOpenAdmissionIsNotRefunded stacks a shared tenant limit before a
// per-address one. While the store fails open, requests the address limit
// refuses were never counted by the store, so nothing may be refunded for
// them: a refund would credit the tenant tokens it never spent, and new
// addresses would then get more than the tenant's budget.
func TestFailedOpenAdmissionIsNotRefunded(t *testing.T) {
	clk := newClock()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := &failOpenSwitch{Charger: mem}
	tenant := Budget{Rate: 1e-6, Burst: 3, PerClient: 100, Inflight: 100, Store: store, Key: Key{PathValue: "tenant", Authenticated: true}}
	address := Budget{Rate: 1e-6, Burst: 1, PerClient: 100, Inflight: 100}
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{"tenant": tenant, "per-address": address}})
	h := route(t, d, Route{Groups: []Group{"tenant", "per-address"}}, status(http.StatusOK))
	send := func(peer string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, tenantReq(peer, "acme"))
		return w.Code
	}
	for i := range 3 { // each address spends its one token and a tenant token
		if got := send(fmt.Sprintf("192.0.2.%d:1", i+1)); got != http.StatusOK {
			t.Fatalf("address %d: got %d, want 200", i+1, got)
		}
	}
	store.down.Store(true)
	for i := range 3 { // admitted open by the tenant, refused by the address
		if got := send(fmt.Sprintf("192.0.2.%d:1", i+1)); got != http.StatusTooManyRequests {
			t.Fatalf("address %d again: got %d, want 429", i+1, got)
		}
	}
	if got := store.refunds.Load(); got != 0 {
		t.Errorf("refunds sent for admissions the store never counted: %d, want 0", got)
	}
	store.down.Store(false)
	clk.Advance(time.Second) // past the probe interval: the store decides again
	if got := send("192.0.2.9:1"); got != http.StatusTooManyRequests {
		t.Errorf("a new address after the outage: got %d, want 429 (the tenant's 3 are spent)", got)
	}
}

// TestStoreFailureRetriesInASecond refuses a request on an hour-long window
// whose store fails closed: Retry-After says 1, not the window, since the
// store may answer again at once.
func TestStoreFailureRetriesInASecond(t *testing.T) {
	budget := Budget{Algorithm: FixedWindow, Limit: 10, Window: time.Hour, PerClient: 10, Inflight: 10, Store: failing{quota.FailClosed}}
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupLink: budget}})
	w := do(d.Wrap(GroupLink, status(http.StatusOK), nil), "GET", "192.0.2.1:1")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %d with Retry-After %q, want 503 with 1", w.Code, w.Header().Get("Retry-After"))
	}
}

// TestUnlimitedRateNeedsNoStore gives a group an infinite rate and a shared
// store: every request is admitted however many arrive at one instant, as
// on the door's own buckets. A store's GCRA rule cannot say "no limit", and
// decided at one time it would let only the burst through.
func TestUnlimitedRateNeedsNoStore(t *testing.T) {
	clk := newClock()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	budget := Budget{Rate: rate.Inf, Burst: 2, PerClient: 100, Inflight: 100, Store: mem}
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupLink: budget}})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for i := range 5 {
		if w := do(h, "GET", "192.0.2.1:1"); w.Code != http.StatusOK {
			t.Fatalf("request %d: got %d, want 200", i+1, w.Code)
		}
	}
}

// TestStorePanicFreesEarlierLimits stacks a local limit before one whose
// store panics: the panic unwinds, and the local limit's slots and tokens
// are given back, or each such request would keep them for good.
func TestStorePanicFreesEarlierLimits(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"first":  {Rate: 1e-9, Burst: 5, PerClient: 1, Inflight: 1},
		"second": {Rate: 1e-9, Burst: 5, PerClient: 1, Inflight: 1, Store: panicky{}},
	}})
	h := route(t, d, Route{Groups: []Group{"first", "second"}}, status(http.StatusOK))
	for range 3 {
		func() {
			defer func() {
				if p := recover(); p != "store bug" {
					t.Fatalf("recovered %v, want the store's panic", p)
				}
			}()
			do(h, "GET", "192.0.2.1:1")
		}()
	}
	assertIdle(t, d.groups["first"])
	assertIdle(t, d.groups["second"])
	if got := d.groups["first"].engine.(*local); got == nil {
		t.Fatal("first is not a local group")
	}
	st, err := d.Client("first", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Tokens != 5 {
		t.Errorf("first: %v tokens left, want all 5 given back", st.Tokens)
	}
}

// TestDownStoreIsAskedOnceASecond fails the store under each policy: the
// first request asks it and gets the policy's answer, the requests after it
// get the same answer without asking, one a second probes it, and once it
// answers requests go to it again. The budget's Failure decides; its zero
// value leaves the decision to the store's own policy.
func TestDownStoreIsAskedOnceASecond(t *testing.T) {
	for _, tc := range []struct {
		name          string
		budget, store quota.Failure
		want          int
	}{
		{"default, the store fails closed", quota.FailDefault, quota.FailClosed, http.StatusServiceUnavailable},
		{"default, the store fails open", quota.FailDefault, quota.FailOpen, http.StatusOK},
		{"closed over a store that fails open", quota.FailClosed, quota.FailOpen, http.StatusServiceUnavailable},
		{"open over a store that fails closed", quota.FailOpen, quota.FailClosed, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			mem, err := memquota.New(memquota.Config{Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			store := &outage{Charger: mem, policy: tc.store}
			budget := DefaultBudgets()[GroupLink]
			budget.Store, budget.Failure = store, tc.budget
			d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupLink: budget}})
			h := d.Wrap(GroupLink, status(http.StatusOK), nil)
			n := 0
			send := func(want int) {
				t.Helper()
				n++
				if w := do(h, "GET", fmt.Sprintf("192.0.2.%d:1", n)); w.Code != want {
					t.Fatalf("request %d: got %d, want %d", n, w.Code, want)
				}
			}
			asked := func(want int64) {
				t.Helper()
				if got := store.calls.Load(); got != want {
					t.Fatalf("after request %d: the store was asked %d times, want %d", n, got, want)
				}
			}
			send(http.StatusOK)
			asked(1)
			store.down.Store(true)
			for range 20 {
				send(tc.want)
			}
			asked(2)
			if got := outcomeCount(d.groups[GroupLink], outcomeStoreError); got != 20 {
				t.Fatalf("store_error count: got %d, want 20", got)
			}
			clk.Advance(time.Second)
			send(tc.want)
			send(tc.want)
			asked(3)
			store.down.Store(false)
			clk.Advance(time.Second)
			send(http.StatusOK)
			send(http.StatusOK)
			asked(5)
			assertIdle(t, d.groups[GroupLink])
		})
	}
}

// TestStoreFailureBudgetChecks refuses the failure policies a door cannot
// carry out, naming the field.
func TestStoreFailureBudgetChecks(t *testing.T) {
	store := failing{quota.FailClosed}
	for _, tc := range []struct {
		name   string
		budget Budget
		want   string
	}{
		{"error", Budget{Store: store, Failure: quota.FailError}, "Failure error"},
		{"out of range", Budget{Store: store, Failure: quota.Failure(9)}, "Failure Failure(9)"},
		{"without a store", Budget{Failure: quota.FailOpen}, "Failure open applies to a group with a Store"},
		{"local without replicas", Budget{Store: store, Failure: quota.FailLocal}, "Failure local needs Replicas"},
		{"replicas under open", Budget{Store: store, Failure: quota.FailOpen, Replicas: 2}, "Replicas 2 applies to Failure local only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Budgets: map[Group]Budget{GroupLink: tc.budget}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	// Replicas alone still turns the fallback on.
	d, err := New(Config{Budgets: map[Group]Budget{GroupLink: {Store: store, Replicas: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := d.Budget(GroupLink); b.Failure != quota.FailLocal {
		t.Fatalf("Replicas 2 alone: Failure %v, want local", b.Failure)
	}
}
