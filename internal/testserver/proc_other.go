//go:build unix && !linux

package testserver

import "syscall"

// sysProcAttr puts the server in its own process group and runs it as cred
// when not nil.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// children returns nil: outside Linux a paused server's children run on.
func children(int) []int { return nil }
