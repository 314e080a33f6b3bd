//go:build !unix

package server

// openFilesLimit reports no limit: the process's handles have no
// RLIMIT_NOFILE to check against.
func openFilesLimit() (uint64, bool) { return 0, false }
