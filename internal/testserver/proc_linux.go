package testserver

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts the server in its own process group, runs it as cred when
// not nil, and kills it when the test binary dies, so that a test killed by
// its timeout leaves no server behind.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGKILL}
}

// children returns the processes whose parent is pid, read from /proc.
// PostgreSQL puts each backend in a process group of its own, so a signal
// to the postmaster's group does not reach them.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		// The command name, in parentheses, may hold spaces: the fields
		// after it are state, then the parent's pid.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			kid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			kids = append(kids, kid)
		}
	}
	return kids
}
