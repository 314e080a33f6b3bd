package admit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// clientState returns d.Client(g, key), failing the test on an error.
func clientState(t *testing.T, d *Door, g Group, key string) ClientState {
	t.Helper()
	st, err := d.Client(g, key)
	if err != nil {
		t.Fatalf("Client(%q, %q): %v", g, key, err)
	}
	return st
}

func TestClientState(t *testing.T) {
	const peer = "192.0.2.1:1000"
	burst := defaults[GroupLink].Burst
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"wide": {Like: GroupLink, Key: Key{IPv4Prefix: 24, IPv6Prefix: 48}},
	}})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range 5 {
		allowed(t, h, peer, http.StatusOK)
	}
	b := newBlocker(http.StatusOK)
	release := hold(t, d.Wrap(GroupLink, b, nil), b, peer, 1)
	defer release()

	got := clientState(t, d, GroupLink, "192.0.2.1")
	want := ClientState{Key: "192.0.2.1/32", Entry: true, Tokens: float64(burst - 6), Inflight: 1}
	if got != want {
		t.Errorf("a client with an entry: got %+v, want %+v", got, want)
	}
	if got := clientState(t, d, GroupLink, "192.0.2.1/32"); got != want {
		t.Errorf("the same client as a prefix: got %+v, want %+v", got, want)
	}
	if got := clientState(t, d, GroupLink, "::ffff:192.0.2.1"); got != want {
		t.Errorf("the same client, IPv4-mapped: got %+v, want %+v", got, want)
	}
	fresh := ClientState{Key: "192.0.2.2/32", Tokens: float64(burst)}
	if got := clientState(t, d, GroupLink, "192.0.2.2"); got != fresh {
		t.Errorf("an unseen client: got %+v, want %+v", got, fresh)
	}

	keys := []struct{ group, in, want string }{
		{"link", "2001:db8::1", "2001:db8::/64"},
		{"link", "2001:db8:0:0:ffff::/80", "2001:db8::/64"},
		{"link", "fe80::1%eth0", "fe80::/64"},
		{"wide", "192.0.2.77", "192.0.2.0/24"},
		{"wide", "192.0.2.77/32", "192.0.2.0/24"},
		{"wide", "2001:db8:1:2::9", "2001:db8:1::/48"},
	}
	for _, k := range keys {
		if got := clientState(t, d, Group(k.group), k.in); got.Key != k.want {
			t.Errorf("group %s, key %q: got key %q, want %q", k.group, k.in, got.Key, k.want)
		}
	}
}

func TestClientStateHashedKeys(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"token":  {Like: GroupLink, Key: Key{Header: "Authorization", Authenticated: true}},
		"tenant": {Like: GroupLink, Key: Key{PathValue: "tenant", Authenticated: true}},
	}})
	mux := http.NewServeMux()
	mux.Handle("GET /t/{tenant}", d.Wrap("tenant", status(http.StatusOK), nil))
	mux.Handle("GET /api", d.Wrap("token", status(http.StatusOK), nil))
	for _, r := range []*http.Request{httptest.NewRequest("GET", "/t/acme%20corp", nil), httptest.NewRequest("GET", "/api", nil)} {
		r.Header.Set("Authorization", "Bearer abc")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: got %d, want 200", r.URL, w.Code)
		}
	}
	burst := float64(defaults[GroupLink].Burst)
	tests := []struct {
		group, key string
		entry      bool
	}{
		{"token", "Bearer abc", true},
		{"token", "bearer   abc", true}, // the scheme without case, as the door reads it
		{"token", "Bearer ABC", false},
		{"tenant", "acme corp", true},
		{"tenant", "acme%20corp", false},
	}
	for _, tt := range tests {
		got := clientState(t, d, Group(tt.group), tt.key)
		if got.Entry != tt.entry || strings.Contains(got.Key, "abc") || len(got.Key) != 32 {
			t.Errorf("group %s, key %q: got %+v, want entry %v under a hash", tt.group, tt.key, got, tt.entry)
		}
		if tt.entry && got.Tokens != burst-1 {
			t.Errorf("group %s, key %q: got %v tokens, want %v", tt.group, tt.key, got.Tokens, burst-1)
		}
	}
}

func TestClientStateSharedBucketAndStore(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		GroupLink:    {MaxClients: 1},
		GroupWebhook: {Store: uncomparable{}},
	}})
	b := newBlocker(http.StatusOK)
	release := hold(t, d.Wrap(GroupLink, b, nil), b, "192.0.2.1:1", 1) // takes the one entry
	allowed(t, d.Wrap(GroupLink, status(http.StatusOK), nil), "192.0.2.2:1", http.StatusOK)
	got := clientState(t, d, GroupLink, "192.0.2.2")
	want := ClientState{Key: "192.0.2.2/32", Shared: true, Tokens: float64(defaults[GroupLink].Burst - 1)}
	if got != want {
		t.Errorf("a client on the shared bucket: got %+v, want %+v", got, want)
	}
	release()

	hb := newBlocker(http.StatusOK)
	releaseHook := hold(t, d.Wrap(GroupWebhook, hb, nil), hb, "192.0.2.3:1", 2)
	got = clientState(t, d, GroupWebhook, "192.0.2.3")
	want = ClientState{Key: "192.0.2.3/32", Store: true, Inflight: 2, Held: 2}
	if got != want {
		t.Errorf("a client of a store group: got %+v, want %+v", got, want)
	}
	if st, err := d.ResetClient(GroupWebhook, "192.0.2.3"); err != nil || st != want {
		t.Errorf("ResetClient on a store group: got %+v, %v; want %+v unchanged", st, err, want)
	}
	releaseHook()
}

func TestClientKeyErrors(t *testing.T) {
	d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
		"token": {Like: GroupLink, Key: Key{Header: "X-Token", Authenticated: true}},
		"all":   {Like: GroupLink, Key: Key{Global: true}},
	}})
	tests := []struct{ group, key, want string }{
		{"nope", "192.0.2.1", `admit: unknown group "nope"`},
		{"link", "example.com", `admit: group "link" is keyed by the client: key "example.com" is not an address or prefix`},
		{"link", "192.0.2.1/33", `admit: group "link" is keyed by the client: key "192.0.2.1/33" is not an address or prefix`},
		{"link", "", `admit: group "link" is keyed by the client: key "" is not an address or prefix`},
		{"token", " ", `admit: group "token" is keyed by header X-Token: want its value, not an empty key`},
		{"all", "192.0.2.1", `admit: group "all" has one key for every request: want "global", not "192.0.2.1"`},
	}
	for _, tt := range tests {
		_, err := d.Client(Group(tt.group), tt.key)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Client(%q, %q): got %v, want an error starting %q", tt.group, tt.key, err, tt.want)
		}
	}
	if got := clientState(t, d, "all", "global"); got.Key != "global" {
		t.Errorf("the global key: got %q, want global", got.Key)
	}
}

func TestResetClient(t *testing.T) {
	const peer = "192.0.2.1:1000"
	burst := defaults[GroupLink].Burst
	d := newDoor(t, newClock(), Config{})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	for range burst - 1 {
		allowed(t, h, peer, http.StatusOK)
	}
	b := newBlocker(http.StatusOK)
	release := hold(t, d.Wrap(GroupLink, b, nil), b, peer, 1) // the burst's last token
	rejected(t, h, peer, http.StatusTooManyRequests, "1")

	st, err := d.ResetClient(GroupLink, "192.0.2.1")
	want := ClientState{Key: "192.0.2.1/32", Entry: true, Tokens: float64(burst), Inflight: 1}
	if err != nil || st != want {
		t.Fatalf("ResetClient: got %+v, %v; want %+v", st, err, want)
	}
	release()
	assertIdle(t, d.groups[GroupLink])
	for range burst {
		allowed(t, h, peer, http.StatusOK)
	}
	rejected(t, h, peer, http.StatusTooManyRequests, "1")

	if st, err := d.ResetClient(GroupLink, "192.0.2.9"); err != nil || st.Entry {
		t.Errorf("ResetClient of an unseen client: got %+v, %v; want no entry and no error", st, err)
	}
	if _, err := d.ResetClient(GroupLink, "bad"); err == nil {
		t.Error("ResetClient with a bad key: got no error")
	}
}

func TestGroupState(t *testing.T) {
	d := newDoor(t, newClock(), Config{})
	h := d.Wrap(GroupLink, status(http.StatusOK), nil)
	allowed(t, h, "192.0.2.1:1", http.StatusOK)
	allowed(t, h, "192.0.2.2:1", http.StatusOK)
	b := newBlocker(http.StatusOK)
	release := hold(t, d.Wrap(GroupLink, b, nil), b, "192.0.2.3:1", 1)
	defer release()
	if got, ok := d.GroupState(GroupLink); !ok || got != (GroupState{Clients: 3, Inflight: 1}) {
		t.Errorf("link: got %+v, %v; want 3 clients, 1 in flight", got, ok)
	}
	if _, ok := d.GroupState("nope"); ok {
		t.Error("an unknown group: got a state")
	}
}
