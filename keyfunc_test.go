package admit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/admitgo/admit/quota"
	"github.com/admitgo/admit/quota/memquota"
)

// userKey is the context key an app's authentication middleware would set.
type userKey struct{}

// withUser returns r as an authentication middleware would pass it on.
func withUser(r *http.Request, user string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userKey{}, user))
}

// userOf is a key function: the user an earlier middleware authenticated.
func userOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// doAs sends one GET from peer through h as user ("" for none).
func doAs(h http.Handler, peer, user string) int {
	r := httptest.NewRequest("GET", "/x", nil)
	r.RemoteAddr = peer
	if user != "" {
		r = withUser(r, user)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// A key function keys a group by a value of the app's: the table stays
// within MaxClients however many users come, a user who spent their burst
// stays refused while they do, and no entry holds the value itself.
func TestKeyFuncBoundedTable(t *testing.T) {
	const table, users = 8, 800 // a hundred times as many users as entries
	clk := newClock()
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{
		"api": {Rate: 0.001, Burst: 2, SharedRate: 1e9, SharedBurst: users, MaxClients: table, Key: Key{Func: userOf}},
	}})
	h := d.Wrap("api", status(http.StatusOK), nil)
	const peer = "203.0.113.5:4000" // one address for everyone: only the user keys
	for range 2 {
		if got := doAs(h, peer, "alice"); got != http.StatusOK {
			t.Fatalf("alice within her burst: got %d, want 200", got)
		}
	}
	if got := doAs(h, peer, "alice"); got != http.StatusTooManyRequests {
		t.Fatalf("alice past her burst: got %d, want 429", got)
	}
	for i := range users {
		if got := doAs(h, peer, fmt.Sprintf("user-%d", i)); got != http.StatusOK {
			t.Fatalf("user-%d: got %d, want 200 (its own entry or the shared bucket)", i, got)
		}
		if i%100 == 99 {
			if got := doAs(h, peer, "alice"); got != http.StatusTooManyRequests {
				t.Fatalf("alice after %d other users: got %d, want 429 (a spent bucket is never evicted)", i+1, got)
			}
		}
	}
	st, _ := d.GroupState("api")
	if st.Clients > table {
		t.Errorf("client table: got %d entries, want at most %d", st.Clients, table)
	}
	g := d.groups["api"]
	for i := range g.shards {
		s := &g.shards[i]
		if n := len(s.perClient) + s.table.Len(); n > table {
			t.Errorf("shard %d holds %d keys, want at most %d", i, n, table)
		}
		for k := range s.table.All() {
			if k.Bits() != 0 {
				t.Errorf("table key %v is not a hash", k)
			}
		}
	}
	r := withUser(httptest.NewRequest("GET", "/x", nil), "alice")
	if got, _ := d.KeyOf("api", r); got != quota.Subject("alice") {
		t.Errorf("KeyOf: got %q, want the hash %q", got, quota.Subject("alice"))
	}
	if c, err := d.Client("api", "alice"); err != nil || !c.Entry || c.Tokens >= 1 {
		t.Errorf("Client(alice): got %+v, %v; want her entry, spent", c, err)
	}
}

// An empty result is a missing value: the request is keyed by its client,
// or refused with 400 when the group rejects a missing key.
func TestKeyFuncEmpty(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reject bool
		want   int
	}{
		{"keyed by the client", false, http.StatusOK},
		{"refused", true, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoor(t, newClock(), Config{Budgets: map[Group]Budget{
				"api": {Rate: 0.001, Burst: 1, Key: Key{Func: userOf, RejectMissing: tc.reject}},
			}})
			h := d.Wrap("api", status(http.StatusOK), nil)
			if got := doAs(h, "198.51.100.1:1", ""); got != tc.want {
				t.Fatalf("no user: got %d, want %d", got, tc.want)
			}
			if tc.reject {
				return
			}
			key, err := d.KeyOf("api", httptest.NewRequest("GET", "/x", nil))
			if want := "192.0.2.1/32"; err != nil || key != want {
				t.Errorf("KeyOf without a user: got %q, %v; want the client %q", key, err, want)
			}
			// The client spent its token; a user behind the same address
			// has a budget of their own.
			if got := doAs(h, "198.51.100.1:1", ""); got != http.StatusTooManyRequests {
				t.Errorf("no user again: got %d, want 429", got)
			}
			if got := doAs(h, "198.51.100.1:1", "bob"); got != http.StatusOK {
				t.Errorf("bob from the same address: got %d, want 200", got)
			}
		})
	}
}

func TestKeyFuncValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  Key
		want string
	}{
		{"with a header", Key{Func: userOf, Header: "X-User"}, `admit: group "api": set one of Key.Header, Key.PathValue, Key.Global and Key.Func`},
		{"with a prefix", Key{Func: userOf, IPv4Prefix: 24}, `admit: group "api": Key.IPv4Prefix and Key.IPv6Prefix widen a key by the client's address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Budgets: map[Group]Budget{"api": {Rate: 1, Burst: 1, Key: tc.key}}})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	d, err := New(Config{Budgets: map[Group]Budget{"api": {Like: GroupLink, Key: Key{Func: userOf}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Its client is a user, whom every address of theirs shares, as a
	// header key's: the group's cap is the only one.
	if b, _ := d.Budget("api"); b.PerClient != namedInflight {
		t.Errorf("PerClient: got %d, want %d", b.PerClient, namedInflight)
	}
	// A route may be limited by it alone: the app computes the value.
	if _, err := d.Handler(Route{Groups: []Group{"api"}}, status(200)); err != nil {
		t.Errorf("Handler: %v", err)
	}
}

// funcDoor returns a door whose group "api" is keyed by userOf, answering
// 200, with metrics recorded by a real SDK as benchDoor's.
func funcDoor(tb testing.TB) http.Handler {
	tb.Helper()
	d, err := New(Config{MeterProvider: sdkProvider(), Budgets: map[Group]Budget{
		"api": {Rate: 1e9, Burst: 1000, Key: Key{Func: userOf}},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return d.Wrap("api", status(http.StatusOK), nil)
}

// userRequests returns n requests from one peer, each as a user of its own.
func userRequests(n int) []*http.Request {
	rs := requests(n, "GET")
	for i, r := range rs {
		r.RemoteAddr = "203.0.113.5:4000"
		rs[i] = withUser(r, fmt.Sprintf("user-%d", i))
	}
	return rs
}

// A key function that reads the request's context costs the door no
// allocation: the value is hashed on the stack.
func TestKeyFuncAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -race and -cover; the benchmark run checks them")
	}
	h := funcDoor(t)
	w := &discard{h: http.Header{}}
	r := userRequests(1)[0]
	if got := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); got != 0 {
		t.Errorf("got %v allocations, want 0", got)
	}
}

// BenchmarkKeyFunc measures the allowed path of a group keyed by a key
// function, for 1 and 65,536 rotating users (the latter exceeds the
// 16,384-entry table); BenchmarkDoor is the same path keyed by the peer.
func BenchmarkKeyFunc(b *testing.B) {
	for _, users := range []int{1, 65536} {
		rs := userRequests(users)
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			h := funcDoor(b)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.ServeHTTP(w, rs[i%users])
				i++
			}
		})
	}
}

// TestKeyFuncValueNotAnAddress checks that on a shared store a value the
// client chooses cannot name a client's budget: the user "192.0.2.7/32"
// and the anonymous client 192.0.2.7, keyed by its address, spend apart.
func TestKeyFuncValueNotAnAddress(t *testing.T) {
	clk := newClock()
	mem, err := memquota.New(memquota.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	d := newDoor(t, clk, Config{Budgets: map[Group]Budget{
		"api": {Rate: 0.001, Burst: 1, PerClient: 100, Inflight: 100, Store: mem, Key: Key{Func: userOf}},
	}})
	h := d.Wrap("api", status(http.StatusOK), nil)
	if got := doAs(h, "198.51.100.9:1", "192.0.2.7/32"); got != http.StatusOK {
		t.Fatalf("user 192.0.2.7/32: got %d, want 200", got)
	}
	if got := doAs(h, "192.0.2.7:1", ""); got != http.StatusOK {
		t.Errorf("anonymous client 192.0.2.7 after a user named like it: got %d, want 200 (a budget of its own)", got)
	}
}
