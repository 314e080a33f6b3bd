//go:build unix

package server

import "syscall"

// openFilesLimit returns the soft RLIMIT_NOFILE, and false when it cannot be
// read. Since Go 1.19 the runtime raises the soft limit to (about) the hard
// one before main runs, and gives the processes it starts the original
// back, so admit reads the limit and sets nothing.
func openFilesLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true
}
