package admit

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/admitgo/admit/clientip"
	"github.com/admitgo/admit/quota"
)

// exemptDoor returns a door whose group "api" has a burst of 1 that never
// refills, exempts 10.0.0.0/8 and the X-Api-Key "partner", and trusts the
// forwarding headers of the proxies in 192.0.2.0/24 only; and the outcomes
// it told.
func exemptDoor(t *testing.T, b Budget) (*Door, *[]string) {
	t.Helper()
	proxies, _ := clientip.ParseTrustedProxies("192.0.2.0/24")
	resolver, err := clientip.New(clientip.Config{TrustedProxies: proxies})
	if err != nil {
		t.Fatal(err)
	}
	b.Rate, b.Burst = 0.001, 1
	b.Exempt = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	var (
		mu   sync.Mutex // guards told: requests held at once tell at once
		told []string
	)
	d := newDoor(t, newClock(), Config{Key: resolver.Key, Budgets: map[Group]Budget{"api": b},
		Decided: func(_ *http.Request, _ Group, o string, _ int) {
			mu.Lock()
			told = append(told, o)
			mu.Unlock()
		}})
	return d, &told
}

// sendFrom sends one GET from peer with the given header lines through h.
func sendFrom(h http.Handler, peer string, header ...string) int {
	r := httptest.NewRequest("GET", "/x", nil)
	r.RemoteAddr = peer
	for _, line := range header {
		name, value, _ := strings.Cut(line, ": ")
		r.Header.Add(name, value)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

func TestExemptPrefixSpendsNothing(t *testing.T) {
	d, told := exemptDoor(t, Budget{})
	h := d.Wrap("api", status(http.StatusOK), nil)
	for i := range 5 {
		if got := sendFrom(h, "10.1.2.3:5000"); got != http.StatusOK {
			t.Fatalf("exempt request %d: got %d, want 200", i, got)
		}
	}
	if got := sendFrom(h, "198.51.100.1:5000"); got != http.StatusOK {
		t.Fatalf("first request of another client: got %d, want 200", got)
	}
	if got := sendFrom(h, "198.51.100.1:5000"); got != http.StatusTooManyRequests {
		t.Fatalf("second request of another client: got %d, want 429", got)
	}
	g := d.groups["api"]
	if n := outcomeCount(g, outcomeExempt); n != 5 {
		t.Errorf("exempt outcomes: got %d, want 5", n)
	}
	if want := "exempted,exempted,exempted,exempted,exempted,ok,rate_limited"; strings.Join(*told, ",") != want {
		t.Errorf("Decided: got %v, want %s", *told, want)
	}
	// Nothing of the exempt client is in the table: it spent nothing.
	if c, _ := d.Client("api", "10.1.2.3"); c.Entry {
		t.Errorf("exempt client: got a table entry %+v, want none", c)
	}
	assertIdle(t, g)
}

// Trusted-proxy rules apply first: a forwarding header from a peer that is
// not a trusted proxy names no client, so it can never make a request
// exempt; the same header from a trusted proxy does.
func TestExemptSpoofedForwarding(t *testing.T) {
	d, _ := exemptDoor(t, Budget{})
	h := d.Wrap("api", status(http.StatusOK), nil)
	const untrusted = "198.51.100.9:5000"
	spoofs := [][]string{
		{"X-Forwarded-For: 10.0.0.1"},
		{"X-Forwarded-For: 10.0.0.1, 192.0.2.10"},
		{"Forwarded: for=10.0.0.1"},
		{"X-Real-Ip: 10.0.0.1"},
		{"X-Forwarded-For: 10.0.0.1", "X-Forwarded-For: 10.0.0.2"},
	}
	if got := sendFrom(h, untrusted, spoofs[0]...); got != http.StatusOK {
		t.Fatalf("first request: got %d, want 200 (its burst)", got)
	}
	for _, spoof := range spoofs {
		if got := sendFrom(h, untrusted, spoof...); got != http.StatusTooManyRequests {
			t.Errorf("untrusted peer with %q: got %d, want 429: the header must not exempt it", spoof, got)
		}
	}
	for _, spoof := range spoofs[:2] {
		r := httptest.NewRequest("GET", "/x", nil)
		r.RemoteAddr = untrusted
		r.Header.Set("X-Forwarded-For", strings.TrimPrefix(spoof[0], "X-Forwarded-For: "))
		if by, ok := exemptBy(d, r); ok {
			t.Errorf("ExemptBy with %q from an untrusted peer: got exempt by %s", spoof, by)
		}
	}
	for range 3 {
		if got := sendFrom(h, "192.0.2.10:443", "X-Forwarded-For: 10.0.0.1"); got != http.StatusOK {
			t.Fatalf("trusted proxy forwarding 10.0.0.1: got %d, want 200 (exempt)", got)
		}
	}
	r := httptest.NewRequest("GET", "/x", nil)
	r.RemoteAddr = "192.0.2.10:443"
	r.Header.Set("X-Forwarded-For", "10.0.0.1")
	if by, ok := exemptBy(d, r); !ok || by != netip.MustParsePrefix("10.0.0.0/8") {
		t.Errorf("exempt: got %v, %v; want exempt by 10.0.0.0/8", by, ok)
	}
}

// An exempt request still takes one of the group's in-flight slots, which
// protect the app.
func TestExemptTakesGroupSlot(t *testing.T) {
	d, _ := exemptDoor(t, Budget{Inflight: 2})
	b := newBlocker(http.StatusOK)
	h := d.Wrap("api", b, nil)
	release := hold(t, h, b, "10.1.2.3:5000", 2)
	if got := sendFrom(h, "10.1.2.4:5000"); got != http.StatusServiceUnavailable {
		t.Errorf("third exempt request with two in flight: got %d, want 503", got)
	}
	release()
	g := d.groups["api"]
	assertIdle(t, g)
	if n := outcomeCount(g, outcomeGroupConcurrency); n != 1 {
		t.Errorf("group_concurrency: got %d, want 1", n)
	}
}

// A listed key of an authenticated header passes without spending; its
// raw value is nowhere in the budget.
func TestExemptKeys(t *testing.T) {
	d, _ := exemptDoor(t, Budget{Key: Key{Header: "X-Api-Key", Authenticated: true}, ExemptKeys: []string{quota.Subject("partner")}})
	h := d.Wrap("api", status(http.StatusOK), nil)
	for range 3 {
		if got := sendFrom(h, "198.51.100.1:5000", "X-Api-Key: partner"); got != http.StatusOK {
			t.Fatalf("partner: got %d, want 200 (exempt)", got)
		}
	}
	sendFrom(h, "198.51.100.1:5000", "X-Api-Key: other")
	if got := sendFrom(h, "198.51.100.1:5000", "X-Api-Key: other"); got != http.StatusTooManyRequests {
		t.Errorf("another key past its burst: got %d, want 429", got)
	}
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("X-Api-Key", "partner")
	if by, ok := exemptBy(d, r); !ok || by != hashKey("partner") {
		t.Errorf("exempt: got %v, %v; want exempt by the key", by, ok)
	}
}

func TestExemptValidate(t *testing.T) {
	sum := quota.Subject("partner")
	for _, tc := range []struct {
		name string
		b    Budget
		want string
	}{
		{"keys on a peer key", Budget{ExemptKeys: []string{sum}}, `admit: group "api": ExemptKeys applies only to a key by Key.Header, Key.PathValue or Key.Func`},
		{"keys on a chosen header", Budget{Key: Key{Header: "X-Api-Key"}, ExemptKeys: []string{sum}}, `admit: group "api": ExemptKeys needs Key.Authenticated: a client could send a listed value of its own`},
		{"a raw key", Budget{Key: Key{Header: "X-Api-Key", Authenticated: true}, ExemptKeys: []string{"partner"}}, `admit: group "api": ExemptKeys entry "partner", want quota.Subject of the value: 32 lower-case hex digits`},
		{"an IPv4-mapped prefix", Budget{Exempt: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}}, `admit: group "api": Exempt ::ffff:10.0.0.0/104 is IPv4-mapped and matches no client: write the IPv4 prefix, such as 10.0.0.0/8`},
		{"an invalid prefix", Budget{Exempt: []netip.Prefix{{}}}, `admit: group "api": Exempt invalid Prefix, want a CIDR prefix such as 10.0.0.0/8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.b.Rate, tc.b.Burst = 1, 1
			_, err := New(Config{Budgets: map[Group]Budget{"api": tc.b}})
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// exemptBy reports whether group "api" of d exempts r, and by which rule.
func exemptBy(d *Door, r *http.Request) (netip.Prefix, bool) {
	g := d.groups["api"]
	client := &clientKey{}
	key, err := g.keyOf(r, r.Header, client)
	if err != nil {
		return netip.Prefix{}, false
	}
	return g.exempt(r, key, client)
}
