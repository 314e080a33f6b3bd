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
				waitReadable(t, d)
			}
		})
	}
}

// waitReadable waits until each idle connection of d has a byte to read or
// its peer's close, without reading: the pool's own peek sees the same.
func waitReadable(t testing.TB, d *Direct) {
	t.Helper()
	d.pool.mu.Lock()
	idle := append([]*conn(nil), d.pool.idle...)
	d.pool.mu.Unlock()
	for _, c := range idle {
		waitPeek(t, c.nc)
	}
}

// waitPeek waits until nc has a byte to read or its peer's close, without
// reading: a peek that waits, on the runtime's poller.
func waitPeek(t testing.TB, nc net.Conn) {
	t.Helper()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	_ = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN
	})
}
