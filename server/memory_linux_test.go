package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/admitgo/admit"
)

// peakRSS returns the peak resident set size of process pid (VmHWM), in
// bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestHealthServiceMemoryIsBounded runs the two attacks on the health
// service that once took the process past 400 MiB and 900 MiB, each on a
// fresh process: gzip bombs (59 KB that inflate to 60 MiB), and, once a
// client's health budget is spent, 64 MiB bodies served by the overflow
// path. The peak resident size must stay within a few megabytes of where it
// started.
func TestHealthServiceMemoryIsBounded(t *testing.T) {
	const allowed = 32 << 20
	bin := build(t)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	io.CopyN(zw, zeros{}, 60<<20)
	zw.Close()
	for _, tc := range []struct {
		name   string
		spend  bool // spend the health budget first, so the attack meets the overflow path
		n      int
		body   func() io.Reader
		header string
	}{
		{"gzip bombs", false, 4, func() io.Reader { return bytes.NewReader(bomb.Bytes()) }, "Content-Encoding: gzip"},
		{"large bodies over budget", true, 8, func() io.Reader { return io.LimitReader(zeros{}, 64<<20) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := spawn(t, bin, "--demo")
			if code := healthCall(t, p.url, http.NoBody, ""); code != http.StatusOK {
				t.Fatalf("a plain Connect health check: got %d, want 200", code)
			}
			before := peakRSS(t, p.cmd.Process.Pid)
			if tc.spend {
				for range admit.DefaultBudgets()[admit.GroupHealth].Burst {
					healthCall(t, p.url, http.NoBody, "")
				}
			}
			var wg sync.WaitGroup
			codes := make(chan int, tc.n)
			for range tc.n {
				wg.Go(func() { codes <- healthCall(t, p.url, tc.body(), tc.header) })
			}
			wg.Wait()
			close(codes)
			after := peakRSS(t, p.cmd.Process.Pid)
			for code := range codes {
				if code == http.StatusOK {
					t.Errorf("an attack call got 200, want it refused")
				}
			}
			t.Logf("peak RSS: %d MiB before, %d MiB after %d calls", before>>20, after>>20, tc.n)
			if after-before > allowed {
				t.Errorf("peak RSS grew by %d MiB under the attack, want at most %d MiB", (after-before)>>20, allowed>>20)
			}
		})
	}
}

// healthCall sends a Connect health check with body and an optional header
// ("Name: value") and returns the status, or 0 when the server closed the
// connection on an oversized body.
func healthCall(t *testing.T, base string, body io.Reader, header string) int {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/grpc.health.v1.Health/Check", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/proto")
	if name, value, ok := strings.Cut(header, ": "); ok {
		req.Header.Set(name, value)
	}
	resp, err := (&http.Client{Timeout: testTimeout}).Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
