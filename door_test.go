package admit

import (
	"fmt"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestRateLimitsLinkClients(t *testing.T) {
	clk := newClock()
	d := newDoor(t, clk, Config{})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)

	for range defaults[GroupLink].Burst {
		allowed(t, h, "192.0.2.1:1000", http.StatusOK)
	}
	// One token refills per second at 1/s: the next is a second away.
	rejected(t, h, "192.0.2.1:1000", http.StatusTooManyRequests, "1")
	allowed(t, h, "192.0.2.2:1000", http.StatusOK)

	clk.Advance(999 * time.Millisecond)
	rejected(t, h, "192.0.2.1:1001", http.StatusTooManyRequests, "1")
	clk.Advance(time.Millisecond)
	allowed(t, h, "192.0.2.1:1002", http.StatusOK)
}

func TestRetryAfterCountsSecondsUntilAToken(t *testing.T) {
	clk := newClock()
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupLink: func() Budget {
		b := DefaultBudgets()[GroupLink]
		b.Rate, b.Burst = 0.1, 1 // one token every 10 s
		return b
	}()}})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	allowed(t, h, "192.0.2.1:1", http.StatusOK)
	rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "10")
	clk.Advance(2500 * time.Millisecond)
	rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "8")
}

func TestChargeOnFailure(t *testing.T) {
	const peer = "198.51.100.7:443"
	t.Run("failures spend tokens", func(t *testing.T) {
		d := newDoor(t, newClock(), Config{})
		h := d.Wrap(GroupWebhook, status(http.StatusBadRequest), nil)
		for range defaults[GroupWebhook].Burst {
			allowed(t, h, peer, http.StatusBadRequest)
		}
		rejected(t, h, peer, http.StatusTooManyRequests, "1")
	})
	t.Run("successes spend nothing", func(t *testing.T) {
		d := newDoor(t, newClock(), Config{})
		h := d.Wrap(GroupWebhook, status(http.StatusOK), nil)
		for range 2 * defaults[GroupWebhook].Burst {
			allowed(t, h, peer, http.StatusOK)
		}
	})
	t.Run("a held token is not lent twice", func(t *testing.T) {
		d := newDoor(t, newClock(), Config{})
		fail := d.Wrap(GroupWebhook, status(http.StatusUnauthorized), nil)
		for range defaults[GroupWebhook].Burst - 1 {
			allowed(t, fail, peer, http.StatusUnauthorized)
		}
		b := newBlocker(http.StatusOK)
		h := d.Wrap(GroupWebhook, b, nil)
		release := hold(t, h, b, peer, 1) // holds the last token
		rejected(t, h, peer, http.StatusTooManyRequests, "1")
		release()
		// The held request answered 200, so its token is back.
		allowed(t, fail, peer, http.StatusUnauthorized)
		rejected(t, fail, peer, http.StatusTooManyRequests, "1")
	})
}

func TestConcurrencyCaps(t *testing.T) {
	t.Run("client cap", func(t *testing.T) {
		d := newDoor(t, newClock(), Config{})
		b := newBlocker(http.StatusOK)
		h := d.Wrap(GroupLink, b, nil)
		release := hold(t, h, b, "192.0.2.1:1", defaults[GroupLink].PerClient)
		defer release()
		rejected(t, h, "192.0.2.1:2", http.StatusTooManyRequests, "1")
	})
	t.Run("group cap", func(t *testing.T) {
		d := newDoor(t, newClock(), Config{})
		b := newBlocker(http.StatusOK)
		h := d.Wrap(GroupLink, b, nil)
		r1 := hold(t, h, b, "192.0.2.1:1", defaults[GroupLink].PerClient)
		defer r1()
		b2 := &blocker{entered: b.entered, release: make(chan struct{}), code: http.StatusOK}
		r2 := hold(t, d.Wrap(GroupLink, b2, nil), b2, "192.0.2.2:1", defaults[GroupLink].Inflight-defaults[GroupLink].PerClient)
		defer r2()
		rejected(t, h, "192.0.2.3:1", http.StatusServiceUnavailable, "1")
	})
	t.Run("overflow serves both", func(t *testing.T) {
		d := newDoor(t, newClock(), Config{})
		b := newBlocker(http.StatusOK)
		overflow := status(http.StatusTeapot)
		h := d.Wrap(GroupLink, b, overflow)
		release := hold(t, h, b, "192.0.2.1:1", defaults[GroupLink].PerClient)
		defer release()
		if w := do(h, "GET", "192.0.2.1:1"); w.Code != http.StatusTeapot {
			t.Errorf("over the client cap: got %d, want the overflow's %d", w.Code, http.StatusTeapot)
		}
		b2 := &blocker{entered: b.entered, release: make(chan struct{}), code: http.StatusOK}
		r2 := hold(t, d.Wrap(GroupLink, b2, nil), b2, "192.0.2.2:1", defaults[GroupLink].Inflight-defaults[GroupLink].PerClient)
		defer r2()
		if w := do(h, "GET", "192.0.2.3:1"); w.Code != http.StatusTeapot {
			t.Errorf("over the group cap: got %d, want the overflow's %d", w.Code, http.StatusTeapot)
		}
	})
	t.Run("a panicking handler frees its slot", func(t *testing.T) {
		d := newDoor(t, newClock(), Config{})
		h := d.Wrap(GroupLink, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic(http.ErrAbortHandler)
		}), nil)
		for range defaults[GroupLink].PerClient + 1 {
			func() {
				defer func() {
					if p := recover(); p != http.ErrAbortHandler {
						t.Fatalf("recovered %v, want the handler's panic re-raised", p)
					}
				}()
				do(h, "GET", "192.0.2.1:1")
			}()
		}
		assertIdle(t, d.groups[GroupLink])
		allowed(t, d.Wrap(GroupLink, status(http.StatusOK), nil), "192.0.2.1:1", http.StatusOK)
	})
}

func TestShadowModeRejectsNothing(t *testing.T) {
	d := newDoor(t, newClock(), Config{Shadow: true})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range defaults[GroupLink].Burst + 5 {
		allowed(t, h, "192.0.2.1:1", http.StatusOK)
	}
}

func TestPolicyHeaders(t *testing.T) {
	clk := newClock()
	d := newDoor(t, clk, Config{PolicyHeaders: true})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	var w interface{ Header() http.Header }
	for range 17 {
		w = do(h, "GET", "192.0.2.1:1")
	}
	if got, want := w.Header().Get("RateLimit-Policy"), `"link";q=20;w=20`; got != want {
		t.Errorf("RateLimit-Policy: got %q, want %q", got, want)
	}
	if got, want := w.Header().Get("RateLimit"), `"link";r=3;t=17`; got != want {
		t.Errorf("RateLimit: got %q, want %q", got, want)
	}
	for range 3 {
		do(h, "GET", "192.0.2.1:1")
	}
	// Refused, t equals Retry-After: the draft asks that a client never be
	// told to retry before the effective window ends.
	r := rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "1")
	if got, want := r.Header().Get("RateLimit"), `"link";r=0;t=1`; got != want {
		t.Errorf("RateLimit when rejected: got %q, want %q", got, want)
	}
	plain := newDoor(t, clk, Config{}).Wrap(GroupLink, status(http.StatusOK), nil)
	if got := do(plain, "GET", "192.0.2.1:1").Header().Get("RateLimit"); got != "" {
		t.Errorf("RateLimit without PolicyHeaders: got %q, want none", got)
	}
}

func TestBadConfiguration(t *testing.T) {
	valid := DefaultBudgets()[GroupLink]
	tests := []struct {
		name   string
		change func(*Budget)
		want   string
	}{
		{"negative rate", func(b *Budget) { b.Rate = -1 }, "Rate"},
		{"burst below one", func(b *Budget) { b.Burst = -1 }, "Burst"},
		{"negative shared rate", func(b *Budget) { b.SharedRate = -1 }, "SharedRate"},
		{"shared burst below one", func(b *Budget) { b.SharedBurst = -2 }, "SharedBurst"},
		{"negative client cap", func(b *Budget) { b.PerClient = -1 }, "PerClient"},
		{"negative group cap", func(b *Budget) { b.Inflight = -3 }, "Inflight"},
		{"negative table", func(b *Budget) { b.MaxClients = -1 }, "MaxClients"},
		{"unknown charge", func(b *Budget) { b.Charge = 9 }, "Charge"},
		{"a new group without its rate", func(b *Budget) { b.Rate = 0 }, "Rate"},
		{"a new group without its burst", func(b *Budget) { b.Burst = 0 }, "Burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := valid
			tt.change(&b)
			_, err := New(Config{Budgets: map[Group]Budget{"signup": b}})
			if err == nil {
				t.Fatalf("New: got no error, want one naming %s", tt.want)
			}
			if msg := err.Error(); !strings.Contains(msg, `"signup"`) || !strings.Contains(msg, tt.want+" ") {
				t.Fatalf("New: got %q, want it to name group \"signup\" and field %s", msg, tt.want)
			}
		})
	}
}

// TestZeroFieldsTakeTheDefaults checks that a budget names only what it
// changes: zero fields keep the group's default (the link group's for a new
// group, but for its in-flight caps), the shared bucket follows the client bucket, and a negative
// timeout or cap means none.
func TestZeroFieldsTakeTheDefaults(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		GroupWebhook: {Burst: 7},
		"signup":     {Rate: 2, Burst: 3, MaxBodyBytes: -1, HoldTimeout: -1},
	}})
	webhook, _ := d.Budget(GroupWebhook)
	want := DefaultBudgets()[GroupWebhook]
	want.Burst, want.SharedBurst = 7, 7
	if !reflect.DeepEqual(webhook, want) {
		t.Errorf("webhook: got %+v, want %+v", webhook, want)
	}
	signup, _ := d.Budget("signup")
	want = DefaultBudgets()[GroupLink]
	want.Rate, want.Burst, want.SharedRate, want.SharedBurst, want.MaxBodyBytes, want.HoldTimeout = 2, 3, 2, 3, -1, -1
	want.PerClient, want.Inflight = namedPerClient, namedInflight
	if !reflect.DeepEqual(signup, want) {
		t.Errorf("signup: got %+v, want %+v", signup, want)
	}
	if link, _ := d.Budget(GroupLink); !reflect.DeepEqual(link, DefaultBudgets()[GroupLink]) {
		t.Errorf("link, not named: got %+v, want its defaults", link)
	}
}

func TestWrapUnknownGroupPanics(t *testing.T) {
	d := newDoor(t, newClock(), Config{})
	defer func() {
		p := recover()
		if msg, _ := p.(string); !strings.Contains(msg, `"signup"`) {
			t.Fatalf("Wrap(signup): recovered %v, want a panic naming the group", p)
		}
	}()
	d.Wrap("signup", status(http.StatusOK), nil)
}

func TestBudgetsOverrideOnlyWhatTheyName(t *testing.T) {
	custom := DefaultBudgets()[GroupLink]
	custom.Burst = 3
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupLink: custom, "signup": custom}})
	if b, _ := d.Budget(GroupLink); b.Burst != 3 {
		t.Errorf("link burst: got %d, want 3", b.Burst)
	}
	if b, _ := d.Budget(GroupWebhook); !reflect.DeepEqual(b, DefaultBudgets()[GroupWebhook]) {
		t.Errorf("webhook budget: got %+v, want the default", b)
	}
	if got := d.Groups(); len(got) != 4 {
		t.Errorf("groups: got %v, want the three defaults and signup", got)
	}
}

func TestGroupCapIsExactAcrossShards(t *testing.T) {
	const clients = 100
	d := newDoor(t, newClock(), Config{})
	if n := len(d.groups[GroupWebhook].shards); n < 2 {
		t.Fatalf("webhook shards: got %d, want several for this test to mean anything", n)
	}
	b := newBlocker(http.StatusOK)
	h := d.Wrap(GroupWebhook, b, nil)
	codes := make(chan int, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { codes <- do(h, "POST", fmt.Sprintf("198.51.%d.%d:1", i/200, i%200)).Code })
	}
	for range defaults[GroupWebhook].Inflight {
		<-b.entered
	}
	for range clients - defaults[GroupWebhook].Inflight {
		if code := <-codes; code != http.StatusServiceUnavailable {
			t.Errorf("over the group cap: got %d, want 503", code)
		}
	}
	close(b.release)
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("admitted: got %d, want 200", code)
		}
	}
	assertIdle(t, d.groups[GroupWebhook])
}

func TestShardsSpreadKeys(t *testing.T) {
	g := newGroup(GroupWebhook, DefaultBudgets()[GroupWebhook], &settings{now: timeline(nil)}, 0)
	per := make([]int, len(g.shards))
	for i := range 1 << 14 {
		per[g.shardOf(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 32))]++
	}
	for i := range 1 << 10 {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 8), byte(i)})
		per[g.shardOf(netip.PrefixFrom(a, 64))]++
	}
	want := (1<<14 + 1<<10) / len(per)
	for i, n := range per {
		if n < want/2 || n > want*2 {
			t.Errorf("shard %d holds %d keys, want about %d", i, n, want)
		}
	}
}

func TestPanicAfterAFailureStillCharges(t *testing.T) {
	budget := tinyWebhook()
	budget.Burst = 2
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupWebhook: budget}})
	h := d.Wrap(GroupWebhook, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		panic(http.ErrAbortHandler)
	}), nil)
	for range 2 {
		func() {
			defer func() { _ = recover() }()
			do(h, "POST", "192.0.2.1:1")
		}()
	}
	rejected(t, h, "192.0.2.1:1", http.StatusTooManyRequests, "1")
	if got := outcomeCount(d.groups[GroupWebhook], outcomeClientError); got != 2 {
		t.Fatalf("client_error: got %d, want 2 (the answers the client got)", got)
	}
}

func TestInfiniteRateNeverLimits(t *testing.T) {
	for _, charge := range []Charge{ChargeAlways, ChargeOnFailure} {
		budget := DefaultBudgets()[GroupWebhook]
		budget.Rate, budget.Burst, budget.Charge = rate.Inf, 1, charge
		d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{GroupWebhook: budget}})
		b := newBlocker(http.StatusBadRequest)
		h := d.Wrap(GroupWebhook, b, nil)
		release := hold(t, h, b, "192.0.2.1:1", 2) // two at once with a burst of 1
		release()
		for range 5 {
			allowed(t, d.Wrap(GroupWebhook, status(http.StatusBadRequest), nil), "192.0.2.1:1", http.StatusBadRequest)
		}
	}
}

// TestDecidedTellsEveryOutcome: the Decided hook hears each limit's outcome
// and the answer's status, for admissions, refusals and a missing key,
// once per limit of a request.
func TestDecidedTellsEveryOutcome(t *testing.T) {
	type call struct {
		group   Group
		outcome string
		status  int
	}
	var calls []call
	d := newDoor(t, newClock(), Config{
		Budgets: map[Group]Budget{
			GroupLink: {Burst: 1},
			"token":   {Rate: 1, Burst: 5, Key: Key{Header: "Authorization", RejectMissing: true, Authenticated: true}},
		},
		Decided: func(r *http.Request, g Group, outcome string, status int) {
			calls = append(calls, call{g, outcome, status})
		},
	})
	link := d.Wrap(GroupLink, status(http.StatusNotFound), nil)
	do(link, "GET", "192.0.2.1:1")
	do(link, "GET", "192.0.2.1:1")
	token, err := d.Handler(Route{Groups: []Group{GroupLink, "token"}}, status(http.StatusOK))
	if err != nil {
		t.Fatal(err)
	}
	do(token, "GET", "192.0.2.2:1")
	want := []call{
		{GroupLink, "client_error", 404},
		{GroupLink, "rate_limited", 429},
		{"token", "missing_key", 401},
	}
	if !slices.Equal(calls, want) {
		t.Errorf("Decided heard %v, want %v", calls, want)
	}
}
