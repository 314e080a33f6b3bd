package testserver

import "syscall"

// sysProcAttr puts the server in its own process group, runs it as cred when
// not nil, and kills it when the test binary dies, so that a test killed by
// its timeout leaves no server behind.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGKILL}
}
