//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package upstream

import (
	"net"
	"syscall"
)

// prober peeks at an idle connection without waiting. Built once per
// connection, so a peek allocates nothing.
type prober struct {
	rc   syscall.RawConn
	peek func(fd uintptr)
	open bool // the last peek found the connection open and silent
	b    [1]byte
}

func newProber(nc net.Conn) *prober {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &prober{rc: rc}
	p.peek = func(fd uintptr) {
		_, _, err := syscall.Recvfrom(int(fd), p.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		p.open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	}
	return p
}

// quiet reports whether an idle connection is still open and the upstream
// has sent nothing on it since its last response. A close (the upstream's
// idle timeout), or bytes that answer no request, mean the connection must
// not carry one. It takes no lock of the connection's, so it answers at
// once while a Read waits on it. It is not safe for concurrent use.
func (p *prober) quiet() bool {
	if p == nil {
		return true
	}
	p.open = false
	return p.rc.Control(p.peek) == nil && p.open
}
