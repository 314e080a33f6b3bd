package bench_test

import (
	"net/http"
	"testing"

	"github.com/admitgo/admit/bench"
)

// start builds p at limit l and stops it when the test ends.
func start(tb testing.TB, p bench.Peer, l bench.Limit) http.Handler {
	tb.Helper()
	h, stop, err := p.New(bench.OK, l)
	if err != nil {
		tb.Fatalf("%s: %v", p.Name, err)
	}
	tb.Cleanup(stop)
	return h
}

// status sends r through h and returns the answer's status.
func status(h http.Handler, w *bench.Discard, r *http.Request) int {
	w.Reset()
	h.ServeHTTP(w, r)
	return w.Status()
}

// TestPeersAreConfiguredAlike checks what the benchmarks assume of every
// peer: an ample budget admits, a tight one rejects a client's second
// request, clients are told apart by RemoteAddr, and a spoofed forwarding
// header changes nothing.
func TestPeersAreConfiguredAlike(t *testing.T) {
	for _, p := range append(bench.Peers(), bench.Bare) {
		t.Run(p.Name, func(t *testing.T) {
			w := bench.NewDiscard()
			ample := start(t, p, bench.Ample)
			for i, r := range bench.Requests(3) {
				for range 100 {
					if got := status(ample, w, r); got != http.StatusOK {
						t.Fatalf("ample budget, client %d: got %d, want 200", i, got)
					}
				}
			}
			if !p.Rejects {
				return
			}
			tight := start(t, p, bench.Tight)
			a, b := bench.Request(bench.Client(0)), bench.Request(bench.Client(1))
			if got := status(tight, w, a); got != http.StatusOK {
				t.Fatalf("tight budget, first request: got %d, want 200", got)
			}
			if got := status(tight, w, a); got != http.StatusTooManyRequests {
				t.Fatalf("tight budget, second request: got %d, want 429", got)
			}
			if got := status(tight, w, b); got != http.StatusOK {
				t.Fatalf("tight budget, another client: got %d, want 200", got)
			}
			spoofed := bench.Request(bench.Client(0))
			for _, h := range []string{"X-Forwarded-For", "X-Real-IP", "True-Client-IP", "CF-Connecting-IP"} {
				spoofed.Header.Set(h, "203.0.113.7")
			}
			if got := status(tight, w, spoofed); got != http.StatusTooManyRequests {
				t.Fatalf("tight budget, spoofed forwarding headers: got %d, want 429 (a header must not change the key)", got)
			}
		})
	}
}

func TestClientsAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range []uint32{0, 1, 255, 256, 1 << 16, 1 << 20, 1<<32 - 1<<24 - 1} {
		a := bench.Client(n)
		if seen[a] {
			t.Fatalf("Client(%d) = %s, seen before", n, a)
		}
		seen[a] = true
	}
	if got, want := bench.Client(0), "1.0.0.0:40000"; got != want {
		t.Errorf("Client(0) = %s, want %s", got, want)
	}
}
