package testrouter

import "syscall"

// sysProcAttr puts the app in its own process group, so that a terminal's
// signals reach only the test and kill reaches all of the app, and kills it
// when the test binary dies, so that a test killed by its timeout leaves no
// app behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
