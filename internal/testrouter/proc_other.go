//go:build unix && !linux

package testrouter

import "syscall"

// sysProcAttr puts the app in its own process group, so that a terminal's
// signals reach only the test and kill reaches all of the app.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
