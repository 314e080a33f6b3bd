//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package upstream

import "net"

// prober would peek at an idle connection; this system offers no peek that
// does not wait.
type prober struct{}

func newProber(net.Conn) *prober { return nil }

// quiet reports that an idle connection may carry a request: a closed one
// fails its request, which is retried when it can be.
func (*prober) quiet() bool { return true }
