package admit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/admitgo/admit/quota/memquota"
)

// heard records what a door's Decided and Waited hooks told: one
// "group outcome status" per limit, and the waits by group.
type heard struct {
	mu     sync.Mutex // guards lines and waits: requests decided at once tell at once
	lines  []string
	waits  map[Group]time.Duration
	served atomic.Int64 // requests that reached the handler
}

func (h *heard) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.lines, ", ")
}

func (h *heard) wait(g Group) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waits[g]
}

// delayDoor returns a door made in the running synctest bubble, so that
// its clock (the default, monotonic) and the waits' timers are the
// bubble's, with budgets, and what its hooks heard.
func delayDoor(t *testing.T, cfg Config, budgets map[Group]Budget) (*Door, *heard) {
	t.Helper()
	h := &heard{waits: map[Group]time.Duration{}}
	cfg.Budgets = budgets
	cfg.Decided = func(_ *http.Request, g Group, o string, status int) {
		h.mu.Lock()
		h.lines = append(h.lines, fmt.Sprintf("%s %s %d", g, o, status))
		h.mu.Unlock()
	}
	cfg.Waited = func(_ *http.Request, g Group, wait time.Duration) {
		h.mu.Lock()
		h.waits[g] += wait
		h.mu.Unlock()
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d, h
}

// counting returns a handler that answers 200 and counts what reached it.
func (h *heard) counting() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.served.Add(1) })
}

// sendCtx sends one GET from peer through h under ctx.
func sendCtx(ctx context.Context, h http.Handler, peer string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, "GET", "/x", nil)
	r.RemoteAddr = peer
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestDelayQueuePerKey: past its burst a key's requests wait for their
// tokens, spaced at the rate, up to Queue of them; the next is refused
// at once, with a Retry-After that says when a retry is let into the
// queue. Another key is not held up.
func TestDelayQueuePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, told := delayDoor(t, Config{}, map[Group]Budget{"api": {Rate: 1, Burst: 1, Queue: 2}})
		start := time.Now()
		var mu sync.Mutex
		at := map[int]time.Duration{}
		h := d.Wrap("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var n int
			fmt.Sscan(r.Header.Get("N"), &n)
			mu.Lock()
			at[n] = time.Since(start)
			mu.Unlock()
		}), nil)
		answers := make([]*httptest.ResponseRecorder, 4)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				r := httptest.NewRequest("GET", "/x", nil)
				r.RemoteAddr = "198.51.100.1:5000"
				r.Header.Set("N", fmt.Sprint(i))
				answers[i] = httptest.NewRecorder()
				h.ServeHTTP(answers[i], r)
			})
			synctest.Wait() // each arrives once the one before is decided
		}
		if st, _ := d.GroupState("api"); st.Waiting != 2 {
			t.Errorf("waiting: got %d, want 2", st.Waiting)
		}
		if w := answers[3]; w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
			t.Errorf("past the queue: got %d with Retry-After %q, want 429 with 1 (a retry in 1s is queued)", w.Code, w.Header().Get("Retry-After"))
		}
		if w := sendCtx(context.Background(), h, "198.51.100.2:5000"); w.Code != http.StatusOK || time.Since(start) != 0 {
			t.Errorf("another key: got %d after %v, want 200 at once", w.Code, time.Since(start))
		}
		wg.Wait()
		for i, want := range []time.Duration{0, time.Second, 2 * time.Second} {
			if answers[i].Code != http.StatusOK || at[i] != want {
				t.Errorf("request %d: got %d at %v, want 200 at %v", i, answers[i].Code, at[i], want)
			}
		}
		if got, want := told.String(), "api ok 200, api rate_limited 429, api ok 200, api delayed 200, api delayed 200"; got != want {
			t.Errorf("told: got %q, want %q", got, want)
		}
		if got := told.wait("api"); got != 3*time.Second {
			t.Errorf("Waited: got %v in all, want 3s (1s and 2s)", got)
		}
		if st, _ := d.GroupState("api"); st.Waiting != 0 {
			t.Errorf("waiting after: got %d, want 0", st.Waiting)
		}
		assertIdle(t, d.groups["api"])
	})
}

// TestDelayRefundWhenClientLeaves: a request whose client goes away while
// it waits is not served, gives its token back, and no longer counts as
// waiting; the key's next request waits only for what it lacks.
func TestDelayRefundWhenClientLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, told := delayDoor(t, Config{}, map[Group]Budget{"api": {Rate: 1, Burst: 1, Queue: 2}})
		h := d.Wrap("api", told.counting(), nil)
		const peer = "198.51.100.1:5000"
		sendCtx(context.Background(), h, peer) // spends the burst
		ctx, leave := context.WithCancel(context.Background())
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- sendCtx(ctx, h, peer) }()
		synctest.Wait()
		if st, _ := d.GroupState("api"); st.Waiting != 1 {
			t.Fatalf("waiting: got %d, want 1", st.Waiting)
		}
		time.Sleep(500 * time.Millisecond)
		leave()
		w := <-done
		if told.served.Load() != 1 || w.Body.Len() != 0 || len(w.Header()) != 0 {
			t.Errorf("the request that left: served %d, answered %d %q, want nothing written", told.served.Load()-1, w.Code, w.Body)
		}
		if st, _ := d.GroupState("api"); st.Waiting != 0 {
			t.Errorf("waiting after it left: got %d, want 0", st.Waiting)
		}
		// Half a second refilled from -1, and the reserved token came back.
		if c, _ := d.Client("api", "198.51.100.1"); c.Tokens != 0.5 {
			t.Errorf("tokens after the refund: got %v, want 0.5", c.Tokens)
		}
		start := time.Now()
		if w := sendCtx(context.Background(), h, peer); w.Code != http.StatusOK || time.Since(start) != 500*time.Millisecond {
			t.Errorf("next request: got %d after %v, want 200 after 500ms", w.Code, time.Since(start))
		}
		if got, want := told.String(), "api ok 200, api delay_abandoned 499, api delayed 200"; got != want {
			t.Errorf("told: got %q, want %q", got, want)
		}
		assertIdle(t, d.groups["api"])
	})
}

// TestDelayGroupBound: the group holds at most MaxWaiting requests
// waiting, whatever their keys; one more is refused at once, with the
// Retry-After of its own token.
func TestDelayGroupBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader, mp := sdkReader()
		d, told := delayDoor(t, Config{MeterProvider: mp}, map[Group]Budget{"api": {Rate: 1, Burst: 1, Queue: 3, MaxWaiting: 2}})
		h := d.Wrap("api", told.counting(), nil)
		var wg sync.WaitGroup
		for _, peer := range []string{"198.51.100.1:1", "198.51.100.2:1"} {
			sendCtx(context.Background(), h, peer)
			wg.Go(func() { sendCtx(context.Background(), h, peer) })
			synctest.Wait()
		}
		sendCtx(context.Background(), h, "198.51.100.3:1") // a third key's burst
		// The first key's queue has room, but the group's has not: its
		// own token comes after the one it waits for, in 2s; the third
		// key's in 1s.
		for _, tt := range []struct{ peer, retry string }{{"198.51.100.1:1", "2"}, {"198.51.100.3:1", "1"}} {
			w := sendCtx(context.Background(), h, tt.peer)
			if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != tt.retry {
				t.Errorf("%s past the group's bound: got %d with Retry-After %q, want 429 with %s", tt.peer, w.Code, w.Header().Get("Retry-After"), tt.retry)
			}
		}
		if st, _ := d.GroupState("api"); st.Waiting != 2 {
			t.Errorf("waiting: got %d, want 2", st.Waiting)
		}
		if v := gauge(collect(t, reader)["admit.door.waiting"], "api"); v != 2 {
			t.Errorf("admit.door.waiting{api}: got %d, want 2", v)
		}
		// A refused request reserved nothing: the first key waits for one
		// token, not two.
		if c, _ := d.Client("api", "198.51.100.1"); c.Tokens != -1 {
			t.Errorf("first key's tokens: got %v, want -1", c.Tokens)
		}
		wg.Wait()
		if st, _ := d.GroupState("api"); st.Waiting != 0 || told.served.Load() != 5 {
			t.Errorf("after: %d waiting, %d served, want 0 and 5", st.Waiting, told.served.Load())
		}
	})
}

// TestDelayFloodStaysBounded floods a delaying group from 4,096 keys, 64
// new ones a wave, each sending 16 requests at once, far past its burst
// and its queue: at any moment at most MaxWaiting requests wait (their
// goroutines are all that outlive a refusal), the table holds at most
// MaxClients entries, and once the flood ends nothing is left waiting,
// in flight or on the heap.
func TestDelayFloodStaysBounded(t *testing.T) {
	const (
		keys, waves, perWave, perKey = 4096, 40, 1024, 16
		maxWaiting, maxClients       = 32, 256
	)
	synctest.Test(t, func(t *testing.T) {
		// No hooks: what they heard would be the heap's growth.
		d, err := New(Config{Budgets: map[Group]Budget{"api": {Rate: 10, Burst: 2, Queue: 4, MaxWaiting: maxWaiting, MaxClients: maxClients}}})
		if err != nil {
			t.Fatal(err)
		}
		h := d.Wrap("api", status(http.StatusOK), nil)
		g := d.groups["api"]
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var wg sync.WaitGroup
		var live atomic.Int64 // request goroutines not yet answered
		sent := 0
		for wave := range waves {
			for j := range perWave {
				k := (wave*perWave/perKey + j/perKey) % keys
				a := netip.AddrFrom4([4]byte{10, 0, byte(k >> 8), byte(k)})
				peer := netip.AddrPortFrom(a, uint16(j)).String()
				live.Add(1)
				wg.Go(func() {
					sendCtx(context.Background(), h, peer)
					live.Add(-1)
				})
				sent++
			}
			synctest.Wait() // every request of the wave is answered, or waits
			st, _ := d.GroupState("api")
			if st.Waiting > maxWaiting || st.Clients > maxClients {
				t.Fatalf("wave %d: %d waiting, %d clients, want at most %d and %d", wave, st.Waiting, st.Clients, maxWaiting, maxClients)
			}
			if n := live.Load(); n > maxWaiting {
				t.Fatalf("wave %d: %d requests outlive their decision, want at most %d waiting", wave, n, maxWaiting)
			}
			time.Sleep(100 * time.Millisecond)
		}
		wg.Wait()
		runtime.GC()
		runtime.ReadMemStats(&after)
		delayed, limited := outcomeCount(g, outcomeDelayed), outcomeCount(g, outcomeRateLimited)
		if ok := outcomeCount(g, outcomeOK); ok+delayed+limited != int64(sent) || delayed == 0 || limited == 0 {
			t.Errorf("outcomes: %d ok, %d delayed, %d rate_limited, want %d in all, some delayed and some refused", ok, delayed, limited, sent)
		}
		if st, _ := d.GroupState("api"); st.Waiting != 0 || st.Inflight != 0 {
			t.Errorf("after the flood: %+v, want nothing waiting or in flight", st)
		}
		assertIdle(t, g)
		growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("%d requests, %d delayed, %d refused; heap growth %.2f MiB", sent, delayed, limited, float64(growth)/(1<<20))
		if growth > 2<<20 {
			t.Errorf("heap grew %d bytes, want under 2 MiB", growth)
		}
	})
}

// TestDelayShadowNeverDelays: in shadow mode a request that would wait
// goes in at once, counted as would_delayed, and spends what it would
// have reserved, so the next decisions are enforcement's.
func TestDelayShadowNeverDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, told := delayDoor(t, Config{Shadow: true}, map[Group]Budget{"api": {Rate: 1, Burst: 1, Queue: 2}})
		h := d.Wrap("api", told.counting(), nil)
		start := time.Now()
		for i := range 4 {
			if w := sendCtx(context.Background(), h, "198.51.100.1:1"); w.Code != http.StatusOK {
				t.Fatalf("request %d: got %d, want 200", i, w.Code)
			}
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("shadow mode waited %v, want never", waited)
		}
		if got, want := told.String(), "api ok 200, api would_delayed 200, api would_delayed 200, api would_rate_limited 200"; got != want {
			t.Errorf("told: got %q, want %q", got, want)
		}
		if c, _ := d.Client("api", "198.51.100.1"); c.Tokens != -2 {
			t.Errorf("tokens: got %v, want -2 (the would-be reservations spent)", c.Tokens)
		}
		if st, _ := d.GroupState("api"); st.Waiting != 0 {
			t.Errorf("waiting: got %d, want 0", st.Waiting)
		}
		assertIdle(t, d.groups["api"])
	})
}

// TestDelayStackedHoldsNoSlot: a request waiting for a later limit's token
// holds nothing of the limits before it, which it spends again once its
// wait is over; when one of them then refuses it, its reservation is
// given back.
func TestDelayStackedHoldsNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, told := delayDoor(t, Config{}, map[Group]Budget{
			"front": {Rate: 0.001, Burst: 10, Inflight: 1},
			"api":   {Rate: 1, Burst: 1, Queue: 2},
		})
		b := newBlocker(http.StatusOK)
		h, err := d.Handler(Route{Groups: []Group{"front", "api"}}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Block") != "" {
				b.ServeHTTP(w, r)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		const peer = "198.51.100.1:1"
		sendCtx(context.Background(), h, peer)
		done := make(chan int)
		go func() { done <- sendCtx(context.Background(), h, peer).Code }()
		synctest.Wait()
		front, _ := d.GroupState("front")
		api, _ := d.GroupState("api")
		if front.Inflight != 0 || api.Inflight != 0 || api.Waiting != 1 {
			t.Errorf("while it waits: front %+v, api %+v, want nothing in flight and one waiting", front, api)
		}
		if code := <-done; code != http.StatusOK {
			t.Errorf("after its wait: got %d, want 200", code)
		}
		if c, _ := d.Client("front", "198.51.100.1"); c.Tokens < 8 || c.Tokens > 8.01 {
			t.Errorf("front's tokens: got %v, want 8 (two requests, spent once each)", c.Tokens)
		}

		// Another client holds front's one slot while this one waits.
		go func() { done <- sendCtx(context.Background(), h, peer).Code }()
		synctest.Wait()
		r := httptest.NewRequest("GET", "/x", nil)
		r.RemoteAddr, r.Header["Block"] = "198.51.100.2:1", []string{"1"}
		go h.ServeHTTP(httptest.NewRecorder(), r)
		<-b.entered
		if code := <-done; code != http.StatusServiceUnavailable {
			t.Errorf("front full after the wait: got %d, want 503", code)
		}
		// At 2s: the key had reached 0 at 1s, reserved to -1, and got its
		// token back when front refused.
		if c, _ := d.Client("api", "198.51.100.1"); c.Tokens != 1 {
			t.Errorf("api's tokens: got %v, want 1 (the reservation given back)", c.Tokens)
		}
		close(b.release)
		synctest.Wait()
		want := "front ok 200, api ok 200, front ok 200, api delayed 200, front group_concurrency 503, front ok 200, api ok 200"
		if got := told.String(); got != want {
			t.Errorf("told: got %q, want %q", got, want)
		}
		assertIdle(t, d.groups["front"])
		assertIdle(t, d.groups["api"])
	})
}

// TestDelayDecideWaits: Decide waits as Handler does, and says for how
// long.
func TestDelayDecideWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, _ := delayDoor(t, Config{}, map[Group]Budget{"api": {Rate: 2, Burst: 1, Queue: 1}})
		client := netip.MustParsePrefix("198.51.100.1/32")
		rt := Route{Groups: []Group{"api"}}
		for i, want := range []struct {
			outcome string
			waited  time.Duration
		}{{"ok", 0}, {"delayed", 500 * time.Millisecond}} {
			v, done, err := d.Decide(context.Background(), rt, client, nil)
			if err != nil || done == nil || v.Outcome != want.outcome || v.Waited != want.waited {
				t.Fatalf("decision %d: got %+v, %v, want %s after %v", i, v, err, want.outcome, want.waited)
			}
			done(http.StatusOK)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		v, done, err := d.Decide(ctx, rt, client, nil)
		if err != nil || done != nil || v.Outcome != "delay_abandoned" || v.Status != 499 {
			t.Errorf("a caller gone: got %+v, %v, want delay_abandoned 499", v, err)
		}
	})
}

// TestDelayBudgetRefused: a queue needs a token bucket that charges every
// request on the door's own buckets; a bound on waiting needs a queue.
func TestDelayBudgetRefused(t *testing.T) {
	mem, err := memquota.New(memquota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		b     Budget
		field string
		words string
	}{
		{"negative queue", Budget{Like: GroupLink, Queue: -1}, "Queue", "Queue -1"},
		{"bound without queue", Budget{Like: GroupLink, MaxWaiting: 5}, "MaxWaiting", "a Queue"},
		{"negative bound", Budget{Like: GroupLink, Queue: 1, MaxWaiting: -1}, "MaxWaiting", "MaxWaiting -1"},
		{"fixed window", Budget{Algorithm: FixedWindow, Limit: 5, Window: time.Second, Queue: 1}, "Queue", "token bucket"},
		{"charge on failure", Budget{Like: GroupWebhook, Queue: 1}, "Queue", "ChargeAlways"},
		{"shared store", Budget{Like: GroupLink, Queue: 1, Store: mem}, "Queue", "Store"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Budgets: map[Group]Budget{"api": tt.b}})
			var be *BudgetError
			if !errors.As(err, &be) || be.Field != tt.field || !strings.Contains(err.Error(), tt.words) {
				t.Fatalf("got %v, want a BudgetError on %s saying %q", err, tt.field, tt.words)
			}
		})
	}
	d, err := New(Config{Budgets: map[Group]Budget{"api": {Like: GroupLink, Queue: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := d.Budget("api"); b.MaxWaiting != b.Inflight {
		t.Errorf("MaxWaiting: got %d, want the group's Inflight, %d", b.MaxWaiting, b.Inflight)
	}
	if b, _ := d.Budget(GroupLink); b.Queue != 0 || b.MaxWaiting != 0 {
		t.Errorf("link: got Queue %d and MaxWaiting %d, want neither by default", b.Queue, b.MaxWaiting)
	}
}

// TestDelayNeverPassesTheBudget floods one key of a delaying group for 3s,
// 20 requests every 100 ms, a third of whose clients leave after 50 ms:
// however the waits and refunds interleave, no span of time sees more
// requests go in than the burst plus what the rate refills in it.
func TestDelayNeverPassesTheBudget(t *testing.T) {
	const rate, burst = 10, 5
	synctest.Test(t, func(t *testing.T) {
		d, err := New(Config{Budgets: map[Group]Budget{"api": {Rate: rate, Burst: burst, Queue: 8, MaxWaiting: 8}}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var mu sync.Mutex
		var in []time.Duration
		h := d.Wrap("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			in = append(in, time.Since(start))
			mu.Unlock()
		}), nil)
		var wg sync.WaitGroup
		for tick := range 30 {
			for j := range 20 {
				wg.Go(func() {
					ctx := context.Background()
					if j%3 == 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
						defer cancel()
					}
					sendCtx(ctx, h, "198.51.100.1:1")
				})
			}
			synctest.Wait()
			if tick < 29 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		wg.Wait()
		// in is in the order requests went in, which is the order of time.
		for i := range in {
			for j := i; j < len(in); j++ {
				if n, most := j-i+1, burst+rate*(in[j]-in[i]).Seconds(); float64(n) > most+1e-9 {
					t.Fatalf("%d requests went in from %v to %v, want at most %.1f", n, in[i], in[j], most)
				}
			}
		}
		if len(in) < burst+rate*3-1 {
			t.Errorf("%d requests went in over 3s, want about the budget's %d", len(in), burst+rate*3)
		}
		t.Logf("%d went in over %v", len(in), in[len(in)-1])
		assertIdle(t, d.groups["api"])
	})
}
