package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"runtime/debug"
	"strconv"
	"strings"
)

// gcPercent is the garbage collector's target (GOGC) when the environment
// sets none. A proxy's live heap is small and steady (its tables are
// bounded), and at Go's default of 100 a flood of refusals makes it collect
// several times a second; at 400 a 429 costs about a sixth less CPU, for a
// heap up to five times the live one instead of twice.
const gcPercent = 400

// memoryShare is the part of the memory the process may use (its cgroup's
// limit, or the host's memory) that its soft memory limit (GOMEMLIMIT) is
// set to when the environment sets none: with it the collector works harder
// as the heap nears the limit, so the larger target cannot take a
// container past its memory.
const memoryShare = 0.75

// tuneGC sets the garbage collector's target and soft memory limit, each
// unless the environment sets it (GOGC, GOMEMLIMIT), from the memory fsys
// (the machine's root) shows. It is the program's choice, not the server
// package's: a program that embeds the server keeps its own.
func tuneGC(getenv func(string) string, fsys fs.FS) {
	percent, limit := gcSettings(getenv, memoryOf(fsys))
	if percent >= 0 {
		debug.SetGCPercent(percent)
	}
	if limit >= 0 {
		debug.SetMemoryLimit(limit)
	}
}

// gcSettings returns the GOGC and soft memory limit to set, -1 for either
// the environment sets or, for the limit, when memory (bytes, 0 when
// unknown) is not known.
func gcSettings(getenv func(string) string, memory int64) (percent int, limit int64) {
	percent, limit = -1, -1
	if getenv("GOGC") == "" {
		percent = gcPercent
	}
	if getenv("GOMEMLIMIT") == "" && memory > 0 {
		limit = int64(float64(memory) * memoryShare)
	}
	return percent, limit
}

// memoryOf returns the memory the process may use, in bytes: the least of
// its cgroup's memory limit (cgroup v2's memory.max, or v1's
// memory.limit_in_bytes, at the root of the cgroup file system as a
// container sees it) and the host's MemTotal, or 0 when none is found.
func memoryOf(fsys fs.FS) int64 {
	var least int64
	take := func(n int64) {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	if b, err := fs.ReadFile(fsys, "sys/fs/cgroup/memory.max"); err == nil {
		take(cgroupLimit(b))
	}
	if b, err := fs.ReadFile(fsys, "sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		take(cgroupLimit(b))
	}
	if b, err := fs.ReadFile(fsys, "proc/meminfo"); err == nil {
		take(memTotal(b))
	}
	return least
}

// cgroupLimit reads a cgroup memory limit file: bytes, or 0 for "max"
// (v2), for v1's "no limit" (a page-rounded 2^63-1), and for anything it
// cannot read.
func cgroupLimit(b []byte) int64 {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}

// memTotal reads MemTotal from /proc/meminfo, in bytes, or 0.
func memTotal(b []byte) int64 {
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
		if !ok || err != nil || n <= 0 || n > 1<<52 {
			return 0
		}
		return n * 1024
	}
	return 0
}
