package admit

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// snapshot lists a group's table from most to least recently used, with each
// entry's tokens.
func snapshot(g *group) []string {
	s := &g.shards[0] // small tables have one shard
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for key, e := range s.table.All() {
		out = append(out, fmt.Sprintf("%v:%.0f", key, e.bucket.tokens))
	}
	return out
}

// tinyWebhook is a charge-on-failure budget with a 2-entry table and bursts of
// 10, so the bounded-memory arithmetic is easy to follow.
func tinyWebhook() Budget {
	b := DefaultBudgets()[GroupWebhook]
	b.MaxClients = 2
	b.Burst, b.SharedBurst = 10, 10
	b.Rate, b.SharedRate = 1, 1
	return b
}

func TestRotatingPeersShareOneBucket(t *testing.T) {
	clk := newClock()
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupWebhook: tinyWebhook()}})
	h := d.Wrap(GroupWebhook, status(http.StatusBadRequest), nil)
	g := d.groups[GroupWebhook]

	for _, peer := range []string{"192.0.2.1:1", "192.0.2.2:1"} {
		for range 10 {
			allowed(t, h, peer, http.StatusBadRequest)
		}
		rejected(t, h, peer, http.StatusTooManyRequests, "1")
	}
	before := snapshot(g)

	admitted := 0
	for i := range 100 {
		w := do(h, "GET", fmt.Sprintf("203.0.113.%d:1", i+1))
		switch w.Code {
		case http.StatusBadRequest:
			admitted++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("rotating peer %d: got %d, want 400 or 429", i, w.Code)
		}
	}
	if admitted != 10 {
		t.Fatalf("rotating peers admitted: got %d, want the shared burst of 10", admitted)
	}
	after := snapshot(g)
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("table changed under rotation: got %v, want %v", after, before)
	}

	rejected(t, h, "203.0.113.200:1", http.StatusTooManyRequests, "1")
	clk.Advance(time.Second) // one shared token (and one per entry) refills
	allowed(t, h, "203.0.113.201:1", http.StatusBadRequest)
}

func TestEvictionSparesClientsInFlight(t *testing.T) {
	clk := newClock()
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupWebhook: tinyWebhook()}})
	g := d.groups[GroupWebhook]
	b := newBlocker(http.StatusOK)
	h := d.Wrap(GroupWebhook, b, nil)

	release := hold(t, h, b, "192.0.2.1:1", 1) // A: oldest, in flight
	defer release()
	allowed(t, d.Wrap(GroupWebhook, status(http.StatusOK), nil), "192.0.2.2:1", http.StatusOK) // B: idle, full
	allowed(t, d.Wrap(GroupWebhook, status(http.StatusOK), nil), "192.0.2.3:1", http.StatusOK) // C: evicts B

	got := snapshot(g)
	want := []string{"192.0.2.3/32:10", "192.0.2.1/32:10"}
	if !slices.Equal(got, want) {
		t.Fatalf("table after the newcomer: got %v, want %v (B evicted, A kept)", got, want)
	}
}

func TestEvictionNeedsAFullBucket(t *testing.T) {
	clk := newClock()
	budget := tinyWebhook()
	budget.Charge = ChargeAlways
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupWebhook: budget}})
	g := d.groups[GroupWebhook]
	h := d.Wrap(GroupWebhook, status(http.StatusOK), nil)

	allowed(t, h, "192.0.2.1:1", http.StatusOK) // A: 9 tokens
	allowed(t, h, "192.0.2.2:1", http.StatusOK) // B: 9 tokens
	allowed(t, h, "192.0.2.3:1", http.StatusOK) // C: no entry is full; shared bucket
	if got, want := snapshot(g), []string{"192.0.2.2/32:9", "192.0.2.1/32:9"}; !slices.Equal(got, want) {
		t.Fatalf("table: got %v, want %v", got, want)
	}
	if got := g.engine.(*local).bucket.tokens; got != 9 {
		t.Fatalf("shared bucket: got %v tokens, want 9", got)
	}
	clk.Advance(time.Second) // A and B are full again
	allowed(t, h, "192.0.2.3:1", http.StatusOK)
	if got, want := snapshot(g), []string{"192.0.2.3/32:9", "192.0.2.2/32:9"}; !slices.Equal(got, want) {
		t.Fatalf("table after refill: got %v, want %v (A, the oldest, reclaimed)", got, want)
	}
}

func TestInflightFollowsAClientIntoTheTable(t *testing.T) {
	clk := newClock()
	budget := tinyWebhook()
	budget.MaxClients, budget.PerClient, budget.Charge = 1, 2, ChargeAlways
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{GroupWebhook: budget}})
	g := d.groups[GroupWebhook]

	allowed(t, d.Wrap(GroupWebhook, status(http.StatusOK), nil), "192.0.2.1:1", http.StatusOK) // A: 9 tokens, not reclaimable
	b := newBlocker(http.StatusOK)
	h := d.Wrap(GroupWebhook, b, nil)
	releaseFirst := hold(t, h, b, "192.0.2.2:1", 1) // B, on the shared bucket
	if got, want := snapshot(g), []string{"192.0.2.1/32:9"}; !slices.Equal(got, want) {
		t.Fatalf("table: got %v, want %v", got, want)
	}

	clk.Advance(time.Second) // A is full and idle again
	b2 := &blocker{entered: b.entered, release: make(chan struct{}), code: http.StatusOK}
	releaseSecond := hold(t, d.Wrap(GroupWebhook, b2, nil), b2, "192.0.2.2:1", 1) // B takes A's entry
	if got, want := snapshot(g), []string{"192.0.2.2/32:9"}; !slices.Equal(got, want) {
		t.Fatalf("table: got %v, want %v", got, want)
	}
	// B has two requests in flight, one from before it had an entry.
	rejected(t, h, "192.0.2.2:1", http.StatusTooManyRequests, "1")
	if got := outcomeCount(g, outcomeClientConcurrency); got != 1 {
		t.Fatalf("client_concurrency: got %d, want 1", got)
	}
	releaseFirst()
	releaseSecond()
	assertIdle(t, g)
}
