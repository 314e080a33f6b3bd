package server

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/internal/testrouter"
)

// frontBurst is the link budget behind the front proxies: 3 at once, then
// one token every 1,000 s, so that none refills while a test runs and every
// count is exact.
const frontBurst = 3

// forgedPrefix starts every address a client forges, so that a check can
// find one wherever it lands in what the upstream receives.
const forgedPrefix = "1.2.3."

// behindFront is admit between a real front proxy and a recording upstream.
type behindFront struct {
	front *testrouter.Front
	rec   *recorder
	admit *running
}

// startBehind starts admit in front of a recorder, configured for kind as
// docs/operators.md says: trusting the front's address for the HTTP
// proxies, expecting PROXY headers from it for the L4 balancer. Then it
// starts kind in front of admit.
func startBehind(t *testing.T, kind testrouter.FrontKind) *behindFront {
	t.Helper()
	cfg := writeConfig(t, fmt.Sprintf(`
routes:
  - {group: link, pattern: "GET /l/{id}"}
budgets:
  link: {rate: 0.001, burst: %d, per_client: 100, inflight: 100}
`, frontBurst))
	flag := "--trusted-proxy"
	if kind == testrouter.HAProxyProxyV2 {
		flag = "--proxy-protocol-from"
	}
	rec := newRecorder(t)
	r := start(t, "--upstream", rec.url, "--config", cfg, flag, testrouter.FrontSource+"/32")
	f := testrouter.StartFront(t, kind, strings.TrimPrefix(r.url, "http://"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", kind, f.LogTail())
		}
	})
	return &behindFront{front: f, rec: rec, admit: r}
}

// clientAt returns a client whose connections come from the loopback
// address addr, as one machine on the internet would.
func clientAt(t *testing.T, addr string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: testTimeout}
	tr := &http.Transport{DialContext: d.DialContext, Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Timeout: testTimeout, Transport: tr}
}

// get sends GET path to the front from c, with headers ("Name: value",
// the name sent as written), and returns the status.
func (b *behindFront) get(t *testing.T, c *http.Client, path string, headers ...string) int {
	t.Helper()
	req, err := http.NewRequest("GET", b.front.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header[name] = append(req.Header[name], value)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s through %s: %v", path, b.front.Kind, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// limited sends frontBurst+2 requests from the client at addr to the
// limited route, request i with the headers forge(i), and fails unless
// exactly the first frontBurst pass and the rest get 429, and each that
// passed reached the upstream as the documented request from addr.
func (b *behindFront) limited(t *testing.T, addr string, forge func(i int) []string) {
	t.Helper()
	c := clientAt(t, addr)
	before := b.rec.count()
	var got []int
	for i := range frontBurst + 2 {
		status := b.get(t, c, "/l/x", forge(i)...)
		got = append(got, status)
		if status == http.StatusOK {
			b.upstreamSaw(t, addr)
		}
	}
	if want := answersForBurst(frontBurst + 2); !slices.Equal(got, want) {
		t.Errorf("%s through %s: got %v, want %v", addr, b.front.Kind, got, want)
	}
	if n := b.rec.count() - before; n != frontBurst {
		t.Errorf("%s through %s: the upstream got %d requests, want the burst, %d", addr, b.front.Kind, n, frontBurst)
	}
}

// answersForBurst returns the statuses n requests from one client get:
// 200 for the burst, then 429.
func answersForBurst(n int) []int {
	want := make([]int, n)
	for i := range want {
		want[i] = http.StatusOK
		if i >= frontBurst {
			want[i] = http.StatusTooManyRequests
		}
	}
	return want
}

// upstreamSaw checks the last request the upstream received against
// docs/operators.md ("What the upstream receives"): X-Forwarded-For holds
// the client address admit resolved, addr, alone, in no other spelling; a
// client's Forwarded is removed; X-Forwarded-Proto is the scheme admit
// served, since no front sets one. No forged address appears anywhere.
func (b *behindFront) upstreamSaw(t *testing.T, addr string) {
	t.Helper()
	h := b.rec.last().Header
	if got := headerFolded(h, "X-Forwarded-For"); !slices.Equal(got, []string{addr}) {
		t.Errorf("through %s: the upstream got X-Forwarded-For %q, want [%s] alone", b.front.Kind, got, addr)
	}
	if got := headerFolded(h, "Forwarded"); got != nil {
		t.Errorf("through %s: the upstream got Forwarded %q, want none", b.front.Kind, got)
	}
	if got := h.Values("X-Forwarded-Proto"); !slices.Equal(got, []string{"http"}) {
		t.Errorf("through %s: the upstream got X-Forwarded-Proto %q, want [http]", b.front.Kind, got)
	}
	for name, values := range h {
		for _, v := range values {
			if strings.Contains(v, forgedPrefix) {
				t.Errorf("through %s: the upstream got a forged address in %s: %q", b.front.Kind, name, v)
			}
		}
	}
}

// forged returns, for request i, a forged address fresh on each request.
func forged(i int) string { return fmt.Sprintf("%s%d", forgedPrefix, 4+i) }

// TestFrontProxies puts real front proxies in front of admit, configured as
// operators do, and clients on distinct loopback addresses that talk to the
// front and forge what they can. Whatever a client forges, its requests
// count against its own address: it gets the burst exactly, then 429, and
// the upstream hears of that address alone. Clients on the loopback
// addresses 127.0.0.2 and up stand for machines on the internet; a client
// on the front's own address, 127.0.0.1, would be a trusted proxy, as every
// local process is once loopback is trusted.
func TestFrontProxies(t *testing.T) {
	for _, kind := range testrouter.FrontKinds() {
		t.Run(string(kind), func(t *testing.T) {
			b := startBehind(t, kind)
			t.Run("forged X-Forwarded-For", func(t *testing.T) {
				b.limited(t, "127.0.0.2", func(i int) []string {
					// Every other request claims that the front's own
					// address was a hop before the front.
					if i%2 == 1 {
						return []string{"X-Forwarded-For: " + forged(i) + ", " + testrouter.FrontSource}
					}
					return []string{"X-Forwarded-For: " + forged(i)}
				})
			})
			t.Run("forged X-Forwarded-For naming another client", func(t *testing.T) {
				b.limited(t, "127.0.0.3", func(int) []string { return []string{"X-Forwarded-For: 127.0.0.4"} })
				// The named client's budget is its own, untouched.
				b.limited(t, "127.0.0.4", func(int) []string { return nil })
			})
			t.Run("forged Forwarded", func(t *testing.T) {
				b.limited(t, "127.0.0.5", func(i int) []string { return []string{"Forwarded: for=" + forged(i)} })
			})
			t.Run("forged underscore spellings", func(t *testing.T) {
				b.limited(t, "127.0.0.6", func(i int) []string {
					return []string{"X_Forwarded_For: " + forged(i), "X-Forwarded_For: " + forged(i), "X_Real_IP: " + forged(i)}
				})
			})
			t.Run("two clients have a budget each", func(t *testing.T) {
				c, d := clientAt(t, "127.0.0.7"), clientAt(t, "127.0.0.8")
				before := b.rec.count()
				var got, gotD []int
				for range frontBurst + 1 {
					got = append(got, b.get(t, c, "/l/x"))
					gotD = append(gotD, b.get(t, d, "/l/x"))
				}
				want := answersForBurst(frontBurst + 1)
				if !slices.Equal(got, want) || !slices.Equal(gotD, want) {
					t.Errorf("127.0.0.7 and 127.0.0.8 in turn: got %v and %v, want %v each", got, gotD, want)
				}
				if n := b.rec.count() - before; n != 2*frontBurst {
					t.Errorf("the upstream got %d requests, want a burst each, %d", n, 2*frontBurst)
				}
			})
			t.Run("forged PROXY header", func(t *testing.T) {
				// Before the request, where an L4 balancer's header goes:
				// the front's own header, if any, comes first, and this
				// one is then the request line, malformed.
				before := b.rec.count()
				a := rawFrom(t, "127.0.0.9", b.front.Addr, "PROXY TCP4 "+forged(0)+" 127.0.0.1 40000 80\r\n"+
					"GET /l/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
				if a.status != http.StatusBadRequest {
					t.Errorf("got %d %q, want 400", a.status, a.body)
				}
				if n := b.rec.count() - before; n != 0 {
					t.Errorf("the upstream got %d requests, want none", n)
				}
			})
			if kind != testrouter.HAProxyProxyV2 {
				return
			}
			t.Run("the balancer's address without a PROXY header is cut off", func(t *testing.T) {
				before := b.rec.count()
				c := dialFrom(t, testrouter.FrontSource, strings.TrimPrefix(b.admit.url, "http://"))
				c.SetDeadline(time.Now().Add(testTimeout))
				// A write may already fail on a connection admit closed.
				_, err := c.Write([]byte("GET /l/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
				if err == nil {
					var resp *http.Response
					if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
						resp.Body.Close()
						t.Errorf("a request without a PROXY header from %s was answered %d, want the connection closed", testrouter.FrontSource, resp.StatusCode)
					}
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("a request without a PROXY header from %s: the connection was held open for %v, want it closed", testrouter.FrontSource, testTimeout)
				}
				if n := b.rec.count() - before; n != 0 {
					t.Errorf("the upstream got %d requests, want none", n)
				}
			})
		})
	}
}
