package admit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// slowWebhook is a webhook budget of one group slot and one token that
// does not refill during a test, with a short grace for its body rate.
func slowWebhook() Budget {
	b := DefaultBudgets()[GroupWebhook]
	b.Inflight, b.PerClient = 1, 1
	b.Rate, b.Burst, b.SharedRate, b.SharedBurst = 0.0001, 1, 0.0001, 1
	b.BodyRateGrace = 300 * time.Millisecond
	return b
}

// proxyLike reads the body and answers 502 when it cannot, as a reverse
// proxy does when the upload to its upstream fails.
var proxyLike = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		w.WriteHeader(http.StatusBadGateway)
	}
})

// slowServer serves a route of the webhook group of budget b.
func slowServer(t *testing.T, b Budget, buffer, shadow bool) (*httptest.Server, func() map[string]int64) {
	t.Helper()
	reader, mp := sdkReader()
	d, err := New(Config{MeterProvider: mp, Budgets: map[Group]Budget{GroupWebhook: b}, Shadow: shadow})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.Handler(Route{Groups: []Group{GroupWebhook}, Buffer: buffer}, proxyLike)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, func() map[string]int64 { return outcomes(t, collect(t, reader)["admit.door.requests"]) }
}

// dripStart opens a connection from local address from that declares a
// body of 100 bytes, sends 10 and stalls; read returns the status it is
// answered.
func dripStart(t *testing.T, from, addr string) (read func() int) {
	t.Helper()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hung server fails the test instead of hanging it
	fmt.Fprintf(conn, "POST /hooks/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	return func() int {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("drip from %s: %v", from, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// post sends a whole body from local address from and returns the status.
func post(t *testing.T, from, url string) int {
	t.Helper()
	resp, err := client(from).Post(url+"/hooks/x", "application/json", strings.NewReader(`{"ok":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A body that breaks its rate is cut when the grace ends, and the cut is
// its client's failure whatever the handler answered (here a proxy's 502):
// it counts as body_cut and spends the charge-on-failure client's token.
func TestCutBodyIsTheClientsFailure(t *testing.T) {
	srv, counts := slowServer(t, slowWebhook(), false, false)
	addr := srv.Listener.Addr().String()
	start := time.Now()
	if got := dripStart(t, "127.0.0.3", addr)(); got != http.StatusBadGateway {
		t.Fatalf("dripper: got %d, want the handler's 502", got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("dripper cut after %v, want at the 300ms grace, well before the 10s deadline", took)
	}
	got := counts()
	if got["webhook/body_cut"] != 1 || got["webhook/server_error"] != 0 {
		t.Errorf("outcomes: got %v, want one body_cut and no server_error", got)
	}
	if code := post(t, "127.0.0.3", srv.URL); code != http.StatusTooManyRequests {
		t.Errorf("the dripper's next delivery: got %d, want 429 (its token spent by the cut)", code)
	}
	if code := post(t, "127.0.0.4", srv.URL); code != http.StatusOK {
		t.Errorf("another client's delivery: got %d, want 200", code)
	}
}

// With Route.Buffer a dripper holds its own slot, not the group's: a
// delivery from another client is served while it drips, and the door
// answers the dripper 408 itself when its rate cuts it.
func TestBufferedDripperHoldsNoGroupSlot(t *testing.T) {
	for _, buffer := range []bool{false, true} {
		t.Run(fmt.Sprintf("buffer=%v", buffer), func(t *testing.T) {
			srv, counts := slowServer(t, slowWebhook(), buffer, false)
			read := dripStart(t, "127.0.0.3", srv.Listener.Addr().String())
			// The dripper's request has been admitted once a second
			// request of its own is refused (it holds the client's one
			// token meanwhile).
			deadline := time.Now().Add(5 * time.Second)
			for post(t, "127.0.0.3", srv.URL) == http.StatusOK {
				if time.Now().After(deadline) {
					t.Fatal("the dripper's request was not admitted within 5s")
				}
			}
			want := http.StatusServiceUnavailable
			if buffer {
				want = http.StatusOK
			}
			if code := post(t, "127.0.0.4", srv.URL); code != want {
				t.Errorf("a delivery beside the dripper: got %d, want %d", code, want)
			}
			wantCut := http.StatusBadGateway
			if buffer {
				wantCut = http.StatusRequestTimeout
			}
			if got := read(); got != wantCut {
				t.Errorf("dripper: got %d, want %d", got, wantCut)
			}
			if got := counts(); got["webhook/body_cut"] != 1 {
				t.Errorf("outcomes: got %v, want one body_cut", got)
			}
		})
	}
}

// waitOutcome calls try until outcome o has been counted once.
func waitOutcome(t *testing.T, counts func() map[string]int64, o string, try func()) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for counts()[o] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 5s: %v", o, counts())
		}
		try()
	}
}

// The bodies a buffered group is reading hold no more than its bound,
// Inflight times MaxBodyBytes: with one slot and a cap of 100 bytes, a
// dripper that declares 100 holds them all, and a delivery beside it is
// refused 503 rather than buffered; in shadow mode it is served, and
// counted as would_group_concurrency.
func TestBufferBound(t *testing.T) {
	for _, shadow := range []bool{false, true} {
		t.Run(fmt.Sprintf("shadow=%v", shadow), func(t *testing.T) {
			b := slowWebhook()
			b.MaxBodyBytes, b.BodyRateGrace = 100, 5*time.Second
			srv, counts := slowServer(t, b, true, shadow)
			dripStart(t, "127.0.0.3", srv.Listener.Addr().String())
			outcome, want := "webhook/group_concurrency", http.StatusServiceUnavailable
			if shadow {
				outcome, want = "webhook/would_group_concurrency", http.StatusOK
			}
			from, last := 10, 0
			waitOutcome(t, counts, outcome, func() {
				from++ // each from an address of its own, whose token a delivery spends
				last = post(t, fmt.Sprintf("127.0.0.%d", from), srv.URL)
			})
			if last != want {
				t.Errorf("the delivery that met the bound: got %d, want %d", last, want)
			}
			if got := counts(); got["webhook/ok"] != 0 {
				t.Errorf("outcomes: got %v, want no delivery served as ok while the dripper holds the bound", got)
			}
		})
	}
}

// A minimum body rate without a grace would cut nearly every body whose
// bytes are not all in its first packet (and every body sent after a 100
// Continue), since its deadline would be its start plus what its bytes
// bought: New refuses it, as mod_reqtimeout's rate always has an initial
// timeout. A group without a rate needs no grace.
func TestBodyRateNeedsAGrace(t *testing.T) {
	_, err := New(Config{Budgets: map[Group]Budget{GroupLink: {MinBodyRate: 100, BodyRateGrace: -1}}})
	want := `admit: group "link": BodyRateGrace negative (none) with MinBodyRate 100: a body's first bytes take time to arrive, so nearly every body would be cut; want a positive BodyRateGrace, or MinBodyRate negative (none)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if _, err := New(Config{Budgets: map[Group]Budget{GroupLink: {MinBodyRate: -1, BodyRateGrace: -1}}}); err != nil {
		t.Errorf("no rate and no grace: %v", err)
	}
}

// A route's body rule is the strictest of its groups' in each part, the
// largest minimum rate and the shortest grace, whatever their order: a
// body it passes passes each group's rule on its own.
func TestStackedBodyRule(t *testing.T) {
	slow, fast := slowWebhook(), DefaultBudgets()[GroupLink]
	slow.MinBodyRate, slow.BodyRateGrace = 100, time.Second
	fast.MinBodyRate, fast.BodyRateGrace = 500, 10*time.Second
	d, err := New(Config{Budgets: map[Group]Budget{GroupWebhook: slow, GroupLink: fast}})
	if err != nil {
		t.Fatal(err)
	}
	for _, groups := range [][]Group{{GroupWebhook, GroupLink}, {GroupLink, GroupWebhook}} {
		h, err := d.route(Route{Groups: groups})
		if err != nil {
			t.Fatal(err)
		}
		if h.rule.MinRate != 500 || h.rule.Grace != time.Second {
			t.Errorf("%v: rule %+v, want MinRate 500 and Grace 1s", groups, h.rule)
		}
	}
}
