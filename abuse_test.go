package admit

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestAddressRotation sends one failing webhook delivery from each of
// 1,048,576 addresses with the clock frozen. The first 16,384 fill the table
// (each entry then holds 499 of 500 tokens, so none can be reclaimed); every
// later address spends from the shared bucket until its 500 tokens are gone.
// The total admitted is exactly that, and the heap stays bounded.
func TestAddressRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a million requests")
	}
	const n = 1 << 20
	mp := sdkProvider()
	d := newDoor(t, newClock(), Config{MeterProvider: mp})
	h := d.Wrap(GroupWebhook, status(http.StatusUnauthorized), nil)
	w := &discard{h: http.Header{}}
	r, _ := http.NewRequest("POST", "http://example.com/hooks/x", nil)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	admitted := 0
	for i := range n {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		r.RemoteAddr = netip.AddrPortFrom(a, 40000).String()
		rec := &recorder{discard: w}
		h.ServeHTTP(rec, r)
		if rec.code == http.StatusUnauthorized {
			admitted++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(d)

	if want := defaults[GroupLink].MaxClients + defaults[GroupWebhook].Burst; admitted != want {
		t.Errorf("admitted: got %d, want %d (one per table entry, then the shared burst)", admitted, want)
	}
	g := d.groups[GroupWebhook]
	if _, got, _, _ := g.stats(); got != defaults[GroupLink].MaxClients {
		t.Errorf("table: got %d entries, want %d", got, defaults[GroupLink].MaxClients)
	}
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap growth: %.2f MiB", float64(growth)/(1<<20))
	if growth > 8<<20 {
		t.Errorf("heap grew %d bytes, want under 8 MiB", growth)
	}
}

// recorder notes the status written to a discard writer.
type recorder struct {
	*discard
	code int
}

func (r *recorder) WriteHeader(code int) { r.code = code }

// TestSlowBodiesAreCut opens 200 connections from distinct loopback addresses
// that send part of a webhook body and stall. The group cap admits 64 of
// them; the read deadline cuts those, the cap frees, and a well-behaved
// sender is then served. A link route, another group, is served throughout.
func TestSlowBodiesAreCut(t *testing.T) {
	const attackers = 200
	budget := DefaultBudgets()[GroupWebhook]
	budget.ReadTimeout = 300 * time.Millisecond
	d, err := New(Config{Budgets: map[Group]Budget{GroupWebhook: budget}})
	if err != nil {
		t.Fatal(err)
	}
	hook := d.Wrap(GroupWebhook, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusRequestTimeout)
		}
	}), nil)
	link := d.Wrap(GroupLink, status(http.StatusOK), nil)
	mux := http.NewServeMux()
	mux.Handle("/hooks/", hook)
	mux.Handle("/l/", link)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	codes := make(chan int, attackers)
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Go(func() {
			codes <- drip(t, fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250), addr)
		})
	}
	// While the attack holds the webhook cap, the link group still serves.
	good := client("127.0.0.2")
	for range 5 {
		if code := get(t, good, srv.URL+"/l/x"); code != http.StatusOK {
			t.Fatalf("link during the attack: got %d, want 200", code)
		}
	}
	wg.Wait()
	close(codes)
	tally := map[int]int{}
	for c := range codes {
		tally[c]++
	}
	// The first 64 to arrive hold the cap until the deadline cuts them; an
	// attacker that arrives after a cut (a loaded machine connects the 200
	// over more than the deadline) takes the freed slot and is cut in turn.
	// So every attacker is cut (408) or refused at the cap (503), and at
	// least the cap's worth are cut.
	if cut, refused := tally[http.StatusRequestTimeout], tally[http.StatusServiceUnavailable]; cut < budget.Inflight || cut+refused != attackers {
		t.Fatalf("attackers' answers: got %v, want at least %d cut at the deadline (408) and the rest refused at the cap (503)", tally, budget.Inflight)
	}
	assertIdle(t, d.groups[GroupWebhook])
	resp, err := good.Post(srv.URL+"/hooks/x", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("well-behaved delivery after the cut: got %d, want 200", resp.StatusCode)
	}
}

// drip sends a webhook request from local address from that promises 100
// body bytes and sends 10, then returns the status it gets back.
func drip(t *testing.T, from, addr string) int {
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		t.Errorf("dial from %s: %v", from, err)
		return 0
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hung server fails the test instead of hanging it
	fmt.Fprintf(conn, "POST /hooks/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	resp, err := http.ReadResponse(bufioReader(conn), nil)
	if err != nil {
		t.Errorf("response to %s: %v", from, err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// client returns an HTTP client whose connections come from local address
// from.
func client(from string) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		}},
	}
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPanicsUnderLoadFreeEverySlot runs concurrent requests whose handler
// panics on every other call; afterwards nothing is in flight.
func TestPanicsUnderLoadFreeEverySlot(t *testing.T) {
	reader, mp := sdkReader()
	d := newDoor(t, newClock(), Config{MeterProvider: mp})
	var calls sync.Map
	h := d.Wrap(GroupWebhook, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := calls.LoadOrStore(r.RemoteAddr, new(int))
		*(n.(*int))++
		if *(n.(*int))%2 == 0 {
			panic(http.ErrAbortHandler)
		}
	}), nil)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for range 200 {
				func() {
					defer func() { _ = recover() }()
					do(h, "POST", fmt.Sprintf("192.0.2.%d:1", c))
				}()
			}
		})
	}
	wg.Wait()
	assertIdle(t, d.groups[GroupWebhook])
	points := collect(t, reader)
	if v := gauge(points["admit.door.inflight"], "webhook"); v != 0 {
		t.Fatalf("inflight gauge: got %d, want 0", v)
	}
	if got := outcomes(t, points["admit.door.requests"]); got["webhook/server_error"] != 800 || got["webhook/ok"] != 800 {
		t.Fatalf("outcomes: got %v, want 800 ok and 800 server_error", got)
	}
}
