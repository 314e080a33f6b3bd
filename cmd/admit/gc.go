package main

import (
	"bytes"
	"io/fs"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// gcPercent is the garbage collector's target (GOGC) when the environment
// sets none. A proxy's live heap is small and steady (its tables are
// bounded), and at Go's default of 100 a flood of refusals makes it collect
// several times a second; at 400 a 429 cost 13 % less CPU
// (scripts/bench-proxy against Go's default, docs/performance.md), for a
// heap up to five times the live one instead of twice.
const gcPercent = 400

// memoryShare is the part of the memory the process may use (its cgroups'
// least limit, or the host's memory) that its soft memory limit
// (GOMEMLIMIT) is set to when the environment sets none: with it the
// collector works harder as the heap nears the limit rather than let the
// larger target grow the heap past it. Memory outside the heap (socket
// buffers, the page cache of an access log) counts against a cgroup's limit
// and not against this one, hence the quarter left.
const memoryShare = 0.75

// tuneGC sets the garbage collector's target and soft memory limit, each
// unless the environment holds its variable (GOGC, GOMEMLIMIT; set, even
// empty, it is Go's to read), from the memory fsys (the machine's root)
// shows. It is the program's choice, not the server package's: a program
// that embeds the server keeps its own.
func tuneGC(lookup func(string) (string, bool), fsys fs.FS) {
	percent, limit := gcSettings(lookup, memoryOf(fsys))
	if percent >= 0 {
		debug.SetGCPercent(percent)
	}
	if limit >= 0 {
		debug.SetMemoryLimit(limit)
	}
}

// gcSettings returns the GOGC and soft memory limit to set, -1 for either
// the environment holds or, for the limit, when memory (bytes, 0 when
// unknown) is not known.
func gcSettings(lookup func(string) (string, bool), memory int64) (percent int, limit int64) {
	percent, limit = -1, -1
	if _, set := lookup("GOGC"); !set {
		percent = gcPercent
	}
	if _, set := lookup("GOMEMLIMIT"); !set && memory > 0 {
		limit = int64(float64(memory) * memoryShare)
	}
	return percent, limit
}

// memoryOf returns the memory the process may use, in bytes: the least of
// the memory limits of its cgroup and of every cgroup above it (cgroup v2's
// memory.max and memory.high, v1's memory.limit_in_bytes), as
// /proc/self/cgroup names them, and of the host's MemTotal; or 0 when none
// is found. A limit set above the process, as systemd's MemoryMax= on its
// unit or a pod's on its containers, counts as much as one on its own
// cgroup. In a container whose cgroup file system shows only its own
// cgroup, the path /proc/self/cgroup gives may not exist there; the walk
// then reads what the root shows, which is the container's.
func memoryOf(fsys fs.FS) int64 {
	var least int64
	take := func(n int64) {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	v2, v1 := cgroupPaths(fsys)
	for _, dir := range ancestors("sys/fs/cgroup", v2) {
		for _, file := range []string{"memory.max", "memory.high"} {
			if b, err := fs.ReadFile(fsys, dir+"/"+file); err == nil {
				take(cgroupLimit(b))
			}
		}
	}
	for _, dir := range ancestors("sys/fs/cgroup/memory", v1) {
		if b, err := fs.ReadFile(fsys, dir+"/memory.limit_in_bytes"); err == nil {
			take(cgroupLimit(b))
		}
	}
	if b, err := fs.ReadFile(fsys, "proc/meminfo"); err == nil {
		take(memTotal(b))
	}
	return least
}

// cgroupPaths returns the process's cgroup in the unified hierarchy (v2,
// the line "0::PATH") and in v1's memory hierarchy, from
// /proc/self/cgroup; "/" for either it does not name.
func cgroupPaths(fsys fs.FS) (v2, v1 string) {
	v2, v1 = "/", "/"
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return v2, v1
	}
	for line := range strings.Lines(string(b)) {
		id, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(path, "/") {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2 = path
		case slices.Contains(strings.Split(controllers, ","), "memory"):
			v1 = path
		}
	}
	return v2, v1
}

// ancestors returns root joined with path and with each of its parents, up
// to root itself, as fs.FS paths; a path with "." or ".." parts gives root
// alone.
func ancestors(root, path string) []string {
	dirs := []string{root}
	rel := strings.Trim(path, "/")
	if rel == "" || !fs.ValidPath(rel) {
		return dirs
	}
	for {
		dirs = append(dirs, root+"/"+rel)
		i := strings.LastIndex(rel, "/")
		if i < 0 {
			return dirs
		}
		rel = rel[:i]
	}
}

// cgroupLimit reads a cgroup memory limit file: bytes, or 0 for "max"
// (v2), for v1's "no limit" (2^63-1 rounded down to a page, whatever its
// size), and for anything it cannot read.
func cgroupLimit(b []byte) int64 {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}

// memTotal reads MemTotal from /proc/meminfo, in bytes, or 0.
func memTotal(b []byte) int64 {
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "MemTotal:")
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
