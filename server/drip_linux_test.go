package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDripAttack runs the slow-body attack on the webhook group in real
// time, over HTTP/1.1 and over HTTP/2 with TLS, against a spawned admit in
// front of an upstream that counts what it has in flight: 200 drippers,
// each from a loopback address of its own, declare a 1 MiB body and send
// one byte every 500 ms; one more sends at 1.1 times the webhook's minimum
// body rate; beside them a legitimate sender posts 1 KiB every 100 ms. The
// drippers retry as soon as they are answered, after Retry-After or, in
// the second run, at once with two requests each (on HTTP/2, two streams
// of one connection). The legitimate sender
// must get 90 % of its deliveries through, the drippers must be cut and
// counted as body_cut, the upstream must never see more than the group's
// 64 requests at once, and admit's peak resident size must grow by less
// than 64 MiB. Outside CI it runs for a shorter time.
func TestDripAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time attack")
	}
	attack := 12 * time.Second
	if os.Getenv("CI") == "true" {
		attack = 16 * time.Second
	}
	bin := build(t)
	cert, key, roots := selfSigned(t)
	for _, tc := range []struct {
		name    string
		h2      bool
		waiting bool // drippers honour Retry-After
	}{
		{"HTTP/1.1", false, true},
		{"HTTP/1.1 ignoring Retry-After", false, false},
		{"HTTP/2", true, true},
		{"HTTP/2 ignoring Retry-After", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &countingUpstream{}
			srv := httptest.NewServer(up)
			t.Cleanup(srv.Close)
			args := []string{"--upstream", srv.URL, "--route", "webhook=POST /hooks/"}
			if tc.h2 {
				args = append(args, "--tls-cert", cert, "--tls-key", key)
			}
			p := spawn(t, bin, args...)
			base := p.url
			if tc.h2 {
				base = "https" + strings.TrimPrefix(base, "http")
			}
			before := peakRSS(t, p.cmd.Process.Pid)
			ctx, cancel := context.WithTimeout(t.Context(), attack)
			defer cancel()
			d := &dripRun{base: base, roots: roots, h2: tc.h2}
			var wg sync.WaitGroup
			loops := 1
			if !tc.waiting {
				loops = 2
			}
			for i := range 200 {
				c := d.client(fmt.Sprintf("127.0.0.%d", 2+i))
				defer c.CloseIdleConnections()
				for range loops {
					wg.Go(func() { d.drip(ctx, c, 2, 500*time.Millisecond, tc.waiting, &d.drippers) })
				}
			}
			// 1.1 times the webhook's minimum rate of 500 bytes a second.
			adaptive := d.client("127.0.0.230")
			defer adaptive.CloseIdleConnections()
			wg.Go(func() { d.drip(ctx, adaptive, 55, 100*time.Millisecond, tc.waiting, &d.adaptive) })
			var sent, delivered int
			wg.Go(func() { sent, delivered = d.legitimate(ctx, "127.0.0.250") })
			wg.Wait()
			after := peakRSS(t, p.cmd.Process.Pid)

			t.Logf("legitimate: %d of %d delivered; drippers: %v; adaptive: %v; upstream in flight at most %d; admit's peak RSS grew by %d MiB",
				delivered, sent, d.drippers.counts(), d.adaptive.counts(), up.max.Load(), (after-before)>>20)
			if sent == 0 || delivered*10 < sent*9 {
				t.Errorf("legitimate sender: %d of %d delivered, want at least 90%%", delivered, sent)
			}
			if m := up.max.Load(); m > 64 {
				t.Errorf("upstream in flight: at most %d, want at most the group's 64", m)
			}
			if grew := after - before; grew >= 64<<20 {
				t.Errorf("admit's peak RSS grew by %d MiB, want less than 64", grew>>20)
			}
			if n := d.drippers.total(); n < 200 {
				t.Errorf("drippers answered %d times, want each answered at least once (200)", n)
			}
			if n := d.drippers.count(http.StatusOK); n > 0 {
				t.Errorf("drippers: %d delivered, want none", n)
			}
			r := &running{client: http.DefaultClient, metrics: p.metrics}
			if n := r.count(t, "webhook", "body_cut"); n < 200 {
				t.Errorf("outcome body_cut: got %d, want every dripper cut at least once (200)", n)
			}
		})
	}
}

// countingUpstream answers every request 200 once it has read its body,
// and keeps the most requests it ever had in flight.
type countingUpstream struct {
	now, max atomic.Int64
}

func (u *countingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := u.now.Add(1)
	defer u.now.Add(-1)
	for m := u.max.Load(); n > m && !u.max.CompareAndSwap(m, n); m = u.max.Load() {
	}
	io.Copy(io.Discard, r.Body)
	io.WriteString(w, "delivered\n")
}

// dripRun is one run of the attack.
type dripRun struct {
	base               string
	roots              *x509.CertPool
	h2                 bool
	drippers, adaptive statusCounts
}

// client returns a client whose connections come from address from.
func (d *dripRun) client(from string) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: testTimeout}
	tr := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 8}
	if d.h2 {
		tr.TLSClientConfig = &tls.Config{RootCAs: d.roots}
		tr.ForceAttemptHTTP2 = true
	}
	return &http.Client{Transport: tr}
}

// drip posts bodies through c that declare 1 MiB and send n bytes every
// every, until ctx ends, counting the answers in counts. waiting: after a refusal, wait
// Retry-After.
func (d *dripRun) drip(ctx context.Context, c *http.Client, n int, every time.Duration, waiting bool, counts *statusCounts) {
	for ctx.Err() == nil {
		body := &dripBody{ctx: ctx, n: n, every: every}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/hooks/drip", body)
		req.ContentLength = 1 << 20
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				counts.add(0)
			}
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		counts.add(resp.StatusCode)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); waiting && err == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(s) * time.Second):
			}
		}
	}
}

// legitimate posts 1 KiB every 100 ms until ctx ends, and returns how many
// deliveries it started and how many were answered 2xx.
func (d *dripRun) legitimate(ctx context.Context, from string) (sent, delivered int) {
	c := d.client(from)
	defer c.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	payload := strings.Repeat("x", 1<<10)
	for {
		select {
		case <-ctx.Done():
			return sent, delivered
		case <-tick.C:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/hooks/legit", strings.NewReader(payload))
		resp, err := c.Do(req)
		if ctx.Err() != nil {
			return sent, delivered
		}
		sent++
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 300 {
			delivered++
		}
	}
}

// dripBody sends n bytes every every, without end, until ctx ends.
type dripBody struct {
	ctx   context.Context
	n     int
	every time.Duration
	sent  bool
}

func (b *dripBody) Read(p []byte) (int, error) {
	if b.sent {
		select {
		case <-b.ctx.Done():
			return 0, errors.New("attack over")
		case <-time.After(b.every):
		}
	}
	b.sent = true
	n := min(len(p), b.n)
	for i := range n {
		p[i] = 'x'
	}
	return n, nil
}

// statusCounts counts answers by status; 0 is a request that got none.
type statusCounts struct {
	mu sync.Mutex // guards n
	n  map[int]int
}

func (s *statusCounts) add(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = make(map[int]int)
	}
	s.n[status]++
}

func (s *statusCounts) count(status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[status]
}

func (s *statusCounts) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for st, c := range s.n {
		if st != 0 {
			n += c
		}
	}
	return n
}

func (s *statusCounts) counts() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.n)
}
