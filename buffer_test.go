package admit

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stackedServer serves a buffered route of groups, in order, of budgets.
func stackedServer(t *testing.T, budgets map[Group]Budget, groups []Group, next http.Handler) (*httptest.Server, func() map[string]int64) {
	t.Helper()
	reader, mp := sdkReader()
	d, err := New(Config{MeterProvider: mp, Budgets: budgets})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.Handler(Route{Groups: groups, Buffer: true}, next)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, func() map[string]int64 { return outcomes(t, collect(t, reader)["admit.door.requests"]) }
}

// echo answers the body it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(w, r.Body)
})

// A group without a body cap, or with one so large that Inflight times it
// passes int64, bounds no buffered body of its own: a route whose other
// group caps the body buffers it and serves it, in either order.
func TestBufferUnboundedGroup(t *testing.T) {
	huge := DefaultBudgets()[GroupLink]
	huge.Inflight, huge.MaxBodyBytes = 4, math.MaxInt64/2
	for _, tc := range []struct {
		name string
		link Budget
	}{
		{"no cap", Budget{MaxBodyBytes: -1}},
		{"overflowing cap", huge},
	} {
		for _, groups := range [][]Group{{GroupWebhook, GroupLink}, {GroupLink, GroupWebhook}} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, groups), func(t *testing.T) {
				srv, _ := stackedServer(t, map[Group]Budget{GroupLink: tc.link}, groups, echo)
				resp, err := http.Post(srv.URL+"/h2", "text/plain", strings.NewReader("hello"))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(got) != "hello" {
					t.Errorf("got %d %q, want 200 \"hello\"", resp.StatusCode, got)
				}
			})
		}
	}
}

// A body refused for a group's bound on bodies being read is refused in
// that group's name, not the route's first: here the webhook group, second,
// whose one slot of 100 bytes a dripper holds.
func TestBufferBoundNamesItsGroup(t *testing.T) {
	b := slowWebhook()
	b.MaxBodyBytes, b.BodyRateGrace = 100, 5*time.Second
	srv, counts := stackedServer(t, map[Group]Budget{GroupWebhook: b}, []Group{GroupLink, GroupWebhook}, proxyLike)
	dripStart(t, "127.0.0.3", srv.Listener.Addr().String())
	from := 10
	waitOutcome(t, counts, "webhook/group_concurrency", func() {
		if got := counts()["link/group_concurrency"]; got != 0 {
			t.Fatalf("refused in the link group's name %d times, whose bound no body reached", got)
		}
		from++
		post(t, fmt.Sprintf("127.0.0.%d", from), srv.URL)
	})
}

// In shadow mode a request its group would refuse takes no slot, so only
// the count on bodies being read bounds its memory: a buffered body stays
// counted until its request settles, and one that finds the bound taken
// streams. With a bound of 100 bytes, of five bodies of 40 in the handler
// at once at most two are held whole; once they settle nothing is counted.
func TestShadowBufferHeldUntilSettled(t *testing.T) {
	b := slowWebhook()
	b.PerClient, b.Burst, b.SharedBurst, b.MaxBodyBytes = 8, 100, 100, 100
	d, err := New(Config{Budgets: map[Group]Budget{GroupWebhook: b}, Shadow: true})
	if err != nil {
		t.Fatal(err)
	}
	arrived, release := make(chan bool), make(chan struct{})
	h, err := d.Handler(Route{Groups: []Group{GroupWebhook}, Buffer: true}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := r.Body.(*bufferedBody)
		arrived <- ok && body.rest == nil
		<-release
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan int, 5)
	whole := 0
	for range 5 {
		go func() {
			resp, err := http.Post(srv.URL+"/hooks/x", "text/plain", strings.NewReader(strings.Repeat("x", 40)))
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		if <-arrived {
			whole++
		}
	}
	close(release)
	for range 5 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("got %d, want 200", code)
		}
	}
	if whole > 2 {
		t.Errorf("%d bodies of 40 bytes held whole in the handler at once, want at most 2 under the bound of 100", whole)
	}
	if n := d.groups[GroupWebhook].buffered.Load(); n != 0 {
		t.Errorf("%d bytes still counted once every request settled", n)
	}
}

// Once a buffered body is whole, the request the handler gets says what
// it is: its length, no Transfer-Encoding, and no Expect, whose 100 the
// server has sent when the door read the body, so a proxy behind the door
// neither waits for an upstream's 100 nor relays a second one.
func TestExpectDroppedOnceBuffered(t *testing.T) {
	type seen struct {
		expect []string
		length int64
		te     []string
	}
	got := make(chan seen, 1)
	srv, _ := stackedServer(t, nil, []Group{GroupWebhook}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header["Expect"], r.ContentLength, r.TransferEncoding}
	}))
	req, err := http.NewRequest("POST", srv.URL+"/hooks/x", io.NopCloser(strings.NewReader("hello"))) // no length: chunked
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Expect", "100-continue")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := <-got; s.expect != nil || s.length != 5 || s.te != nil {
		t.Errorf("handler saw Expect %q, length %d, Transfer-Encoding %q; want none, 5, none", s.expect, s.length, s.te)
	}
}

// In shadow mode a body that finds its group's bound taken streams on
// rather than being refused; its Expect goes all the same, since the
// server sent its 100 when the door began to read, and a proxy behind the
// door would otherwise relay an upstream's 100 as a second one.
func TestShadowStreamedBodyDropsExpect(t *testing.T) {
	b := slowWebhook()
	b.PerClient, b.Burst, b.SharedBurst, b.MaxBodyBytes = 8, 100, 100, 100
	d, err := New(Config{Budgets: map[Group]Budget{GroupWebhook: b}, Shadow: true})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		streamed bool
		expect   []string
		body     string
	}
	got := make(chan seen, 1)
	h, err := d.Handler(Route{Groups: []Group{GroupWebhook}, Buffer: true}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := r.Body.(*bufferedBody)
		all, _ := io.ReadAll(r.Body)
		got <- seen{body != nil && body.rest != nil, r.Header["Expect"], string(all)}
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	g := d.groups[GroupWebhook]
	g.buffered.Add(g.bufferBound()) // another body holds the whole bound
	defer g.buffered.Add(-g.bufferBound())
	req, err := http.NewRequest("POST", srv.URL+"/hooks/x", strings.NewReader(strings.Repeat("x", 40)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Expect", "100-continue")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := <-got
	if !s.streamed || s.expect != nil || len(s.body) != 40 {
		t.Errorf("handler saw streamed %v, Expect %q, %d bytes; want a streamed body of 40 without Expect", s.streamed, s.expect, len(s.body))
	}
}
