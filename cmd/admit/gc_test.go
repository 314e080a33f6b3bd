package main

import (
	"runtime/debug"
	"testing"
	"testing/fstest"
)

func TestGCSettings(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name    string
		env     map[string]string
		memory  int64
		percent int
		limit   int64
	}{
		{"defaults", nil, 4 * gib, 400, 3 * gib},
		{"memory unknown", nil, 0, 400, -1},
		{"GOGC set", map[string]string{"GOGC": "100"}, 4 * gib, -1, 3 * gib},
		{"GOGC off", map[string]string{"GOGC": "off"}, 4 * gib, -1, 3 * gib},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 4 * gib, 400, -1},
		{"both set", map[string]string{"GOGC": "200", "GOMEMLIMIT": "off"}, 4 * gib, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			percent, limit := gcSettings(func(k string) string { return tc.env[k] }, tc.memory)
			if percent != tc.percent || limit != tc.limit {
				t.Errorf("got GOGC %d, limit %d; want %d, %d", percent, limit, tc.percent, tc.limit)
			}
		})
	}
}

func TestMemoryOf(t *testing.T) {
	meminfo := &fstest.MapFile{Data: []byte("MemTotal:       24683664 kB\nMemFree:        1000 kB\n")}
	const host = 24683664 * 1024
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  int64
	}{
		{"host only", fstest.MapFS{"proc/meminfo": meminfo}, host},
		{"cgroup v2 limit", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": {Data: []byte("536870912\n")}}, 536870912},
		{"cgroup v2 max", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": {Data: []byte("max\n")}}, host},
		{"cgroup v1 limit", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("1073741824\n")}}, 1 << 30},
		{"cgroup v1 unlimited", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")}}, host},
		{"limit above the host", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": {Data: []byte("99999999999999\n")}}, host},
		{"garbage", fstest.MapFS{"proc/meminfo": {Data: []byte("MemTotal: lots kB\n")}, "sys/fs/cgroup/memory.max": {Data: []byte("-5\n")}}, 0},
		{"nothing", fstest.MapFS{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := memoryOf(tc.files); got != tc.want {
				t.Errorf("got %d bytes, want %d", got, tc.want)
			}
		})
	}
}

// TestTuneGC applies the settings to this process, and puts Go's back.
func TestTuneGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	tuneGC(func(string) string { return "" }, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("1073741824\n")}})
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("GOGC: got %d, want 400", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 3<<28 {
		t.Errorf("memory limit: got %d, want %d (3/4 of 1 GiB)", got, 3<<28)
	}
}
