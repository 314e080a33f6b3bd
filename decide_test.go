package admit

import (
	"context"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// decideOn asks d about one request of a non-HTTP front and, if admitted,
// ends it with status at once.
func decideOn(t *testing.T, d *Door, rt Route, client string, header http.Header, status int) Verdict {
	t.Helper()
	v, done, err := d.Decide(context.Background(), rt, netip.MustParsePrefix(client), header)
	if err != nil {
		t.Fatal(err)
	}
	if (done != nil) != (v.Status == http.StatusOK) {
		t.Fatalf("status %d with done %v: want done exactly when admitted", v.Status, done != nil)
	}
	if done != nil {
		done(status)
	}
	return v
}

func TestDecideSpendsTheHandlersBudget(t *testing.T) {
	clk := newClock()
	d := newDoor(t, clk, Config{PolicyHeaders: true})
	link := Route{Groups: []Group{GroupLink}}
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	// One client's budget, half spent over HTTP and half through Decide.
	for range defaults[GroupLink].Burst / 2 {
		allowed(t, h, "192.0.2.1:1000", http.StatusOK)
	}
	for range defaults[GroupLink].Burst / 2 {
		if v := decideOn(t, d, link, "192.0.2.1/32", nil, http.StatusOK); v.Status != http.StatusOK || v.Outcome != "ok" || v.Header.Get("RateLimit-Policy") == "" {
			t.Fatalf("within the burst: got %+v, want 200, ok and the policy header", v)
		}
	}
	v := decideOn(t, d, link, "192.0.2.1/32", nil, http.StatusOK)
	if v.Status != http.StatusTooManyRequests || v.Group != GroupLink || v.Outcome != "rate_limited" || v.Header.Get("Retry-After") != "1" {
		t.Fatalf("over the burst: got %+v, want 429 from link with Retry-After 1", v)
	}
	rejected(t, h, "192.0.2.1:1000", http.StatusTooManyRequests, "1")
	clk.Advance(time.Second)
	if v := decideOn(t, d, link, "192.0.2.1/32", nil, http.StatusOK); v.Status != http.StatusOK {
		t.Fatalf("a second later: got %d, want 200", v.Status)
	}
}

// A caller that passes whole addresses does not give one host a bucket
// per address: the key is narrowed as the door's own client keys are.
func TestDecideNarrowsTheClientKey(t *testing.T) {
	d := newDoor(t, newClock(), Config{})
	link := Route{Groups: []Group{GroupLink}}
	for i := range defaults[GroupLink].Burst {
		addr := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)})
		if v := decideOn(t, d, link, netip.PrefixFrom(addr, 128).String(), nil, http.StatusOK); v.Status != http.StatusOK {
			t.Fatalf("request %d: got %d", i, v.Status)
		}
	}
	if v := decideOn(t, d, link, "2001:db8::ff/128", nil, http.StatusOK); v.Status != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64: got %d, want 429", v.Status)
	}
	if v := decideOn(t, d, link, "::ffff:192.0.2.9/128", nil, http.StatusOK); v.Status != http.StatusOK {
		t.Errorf("a mapped IPv4 address: got %d, want its own bucket", v.Status)
	}
	if st, _ := d.Client(GroupLink, "192.0.2.9/32"); !st.Entry {
		t.Errorf("the mapped address is not keyed as 192.0.2.9/32: %+v", st)
	}
}

// Until done is called, the request holds its in-flight slot; done frees
// it once, however often it is called, and a 4xx charges a
// charge-on-failure group.
func TestDecideHoldsTheSlotUntilDone(t *testing.T) {
	d := newDoor(t, newClock(), Config{})
	hook := Route{Groups: []Group{GroupWebhook}}
	client := netip.MustParsePrefix("198.51.100.7/32")
	var dones []func(int)
	for range defaults[GroupWebhook].PerClient {
		v, done, err := d.Decide(context.Background(), hook, client, nil)
		if err != nil || v.Status != http.StatusOK {
			t.Fatalf("got %+v, %v", v, err)
		}
		dones = append(dones, done)
	}
	v, _, _ := d.Decide(context.Background(), hook, client, nil)
	if v.Status != http.StatusTooManyRequests || v.Outcome != "client_concurrency" {
		t.Fatalf("over per_client: got %+v, want 429 client_concurrency", v)
	}
	dones[0](http.StatusUnauthorized)
	dones[0](http.StatusUnauthorized) // a second call must not free a second slot
	if st, _ := d.GroupState(GroupWebhook); st.Inflight != defaults[GroupWebhook].PerClient-1 {
		t.Errorf("in flight %d, want %d", st.Inflight, defaults[GroupWebhook].PerClient-1)
	}
	for _, done := range dones[1:] {
		done(http.StatusOK)
	}
	if st, _ := d.GroupState(GroupWebhook); st.Inflight != 0 {
		t.Errorf("in flight %d after every done, want 0", st.Inflight)
	}
	// The one 401 spent a token; the 200s gave theirs back.
	st, _ := d.Client(GroupWebhook, "198.51.100.7/32")
	if want := float64(defaults[GroupWebhook].Burst - 1); st.Tokens != want || st.Held != 0 {
		t.Errorf("tokens %v, held %d; want %v and 0", st.Tokens, st.Held, want)
	}
}

func TestDecideKeysByHeader(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"token": {Like: GroupLink, Rate: 1, Burst: 1, Key: Key{Header: "Authorization", RejectMissing: true}},
	}})
	rt := Route{Groups: []Group{GroupLink, "token"}}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	if v := decideOn(t, d, rt, "192.0.2.1/32", bearer("a"), http.StatusOK); v.Status != http.StatusOK {
		t.Fatalf("token a: got %d", v.Status)
	}
	if v := decideOn(t, d, rt, "192.0.2.2/32", http.Header{"Authorization": {"  Bearer   a "}}, http.StatusOK); v.Status != http.StatusTooManyRequests || v.Group != "token" {
		t.Errorf("token a respelled, from another client: got %+v, want 429 from token", v)
	}
	// gRPC metadata names headers in lower case.
	if v := decideOn(t, d, rt, "192.0.2.3/32", http.Header{"authorization": {"Bearer a"}}, http.StatusOK); v.Status != http.StatusTooManyRequests || v.Group != "token" {
		t.Errorf("token a under a lower-case name: got %+v, want 429 from token", v)
	}
	if v := decideOn(t, d, rt, "192.0.2.1/32", nil, http.StatusOK); v.Status != http.StatusUnauthorized || v.Outcome != "missing_key" {
		t.Errorf("no token: got %+v, want 401 missing_key", v)
	}
	if v := decideOn(t, d, rt, "192.0.2.1/32", http.Header{"Authorization": {"Bearer a", "Bearer b"}}, http.StatusOK); v.Status != http.StatusBadRequest {
		t.Errorf("two tokens: got %d, want 400", v.Status)
	}
}

func TestDecideRefusesWhatHandlerRefuses(t *testing.T) {
	d := newDoor(t, newClock(), Config{})
	client := netip.MustParsePrefix("192.0.2.1/32")
	for name, rt := range map[string]Route{
		"unknown group": {Groups: []Group{"nope"}},
		"no group":      {},
		"overflow":      {Groups: []Group{GroupLink}, Overflow: status(http.StatusOK)},
		"cost":          {Groups: []Group{GroupLink}, Cost: 1000},
	} {
		if _, done, err := d.Decide(context.Background(), rt, client, nil); err == nil || done != nil {
			t.Errorf("%s: got no error", name)
		}
	}
	if _, _, err := d.Decide(context.Background(), Route{Groups: []Group{GroupLink}}, netip.Prefix{}, nil); err == nil {
		t.Error("no client key: got no error")
	}
}
