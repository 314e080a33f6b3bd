//go:build linux

package upstream

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

// TestDirectIdleClosedByUpstream: an upstream that closes an idle connection
// (its keep-alive timeout) costs no request a 502, whatever its method.
func TestDirectIdleClosedByUpstream(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			up := newRawUpstream(t, func(*http.Request) (string, bool) { return okAnswer, true })
			d := Transport().Direct(up.url(), nil)
			defer d.pool.closeIdle()
			for i := range 3 {
				r := httptest.NewRequest(method, "/x", strings.NewReader("body"))
				if w := forward(t, d, r); w.Code != 200 {
					t.Fatalf("request %d: got %d, want 200", i, w.Code)
				}
				// The upstream hung up after answering, without saying
				// so; wait until the close reached this side.
				waitClosed(t, d)
			}
		})
	}
}

// waitClosed waits until the idle connection of d sees its peer's close.
func waitClosed(t *testing.T, d *Direct) {
	t.Helper()
	d.pool.mu.Lock()
	idle := append([]*conn(nil), d.pool.idle...)
	d.pool.mu.Unlock()
	for _, c := range idle {
		// A peek that waits: EOF once the close arrives. It reads
		// nothing, so the pool's own peek sees the same.
		rc, err := c.nc.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		_ = rc.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return n == 0 && err == nil
		})
	}
}
