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
		// Set but empty is Go's to read (GOGC 100, no limit), not unset.
		{"both empty", map[string]string{"GOGC": "", "GOMEMLIMIT": ""}, 4 * gib, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			percent, limit := gcSettings(lookup, tc.memory)
			if percent != tc.percent || limit != tc.limit {
				t.Errorf("got GOGC %d, limit %d; want %d, %d", percent, limit, tc.percent, tc.limit)
			}
		})
	}
}

func TestMemoryOf(t *testing.T) {
	meminfo := &fstest.MapFile{Data: []byte("MemTotal:       24683664 kB\nMemFree:        1000 kB\n")}
	const host = 24683664 * 1024
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	v2 := file("0::/system.slice/admit.service\n")
	v1 := file("9:name=systemd:/\n4:cpu,cpuacct:/x\n3:memory:/kubepods/pod1/c1\n")
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  int64
	}{
		{"host only", fstest.MapFS{"proc/meminfo": meminfo}, host},
		{"cgroup v2 limit at the root", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": file("536870912\n")}, 536870912},
		{"cgroup v2 max", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": file("max\n")}, host},
		// systemd's MemoryMax= on the unit: the process's own cgroup.
		{"cgroup v2 limit on the unit", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/cgroup": v2,
			"sys/fs/cgroup/system.slice/admit.service/memory.max": file("268435456\n"),
			"sys/fs/cgroup/system.slice/memory.max":               file("max\n"),
		}, 256 << 20},
		// A limit on the slice above the unit, and a lower memory.high.
		{"cgroup v2 limit above", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/cgroup": v2,
			"sys/fs/cgroup/system.slice/admit.service/memory.max":  file("max\n"),
			"sys/fs/cgroup/system.slice/admit.service/memory.high": file("201326592\n"),
			"sys/fs/cgroup/system.slice/memory.max":                file("268435456\n"),
		}, 192 << 20},
		// A container that sees only its own cgroup at the root.
		{"cgroup v2 path not mounted", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/cgroup": v2,
			"sys/fs/cgroup/memory.max": file("134217728\n"),
		}, 128 << 20},
		{"cgroup v1 limit", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory/memory.limit_in_bytes": file("1073741824\n")}, 1 << 30},
		{"cgroup v1 limit on a parent", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/cgroup": v1,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes":    file("536870912\n"),
			"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 512 << 20},
		{"cgroup v1 unlimited, 4 KiB pages", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n")}, host},
		{"cgroup v1 unlimited, 64 KiB pages", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854710272\n")}, host},
		{"limit above the host", fstest.MapFS{"proc/meminfo": meminfo, "sys/fs/cgroup/memory.max": file("99999999999999\n")}, host},
		{"a path that climbs out", fstest.MapFS{
			"proc/meminfo": meminfo, "proc/self/cgroup": file("0::/../../etc\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, host},
		{"MemTotal without its unit", fstest.MapFS{"proc/meminfo": file("MemTotal: 1000\n")}, 0},
		{"garbage", fstest.MapFS{"proc/meminfo": file("MemTotal: lots kB\n"), "sys/fs/cgroup/memory.max": file("-5\n"), "proc/self/cgroup": file("nonsense\n")}, 0},
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
	tuneGC(func(string) (string, bool) { return "", false }, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("1073741824\n")}})
	if got := debug.SetGCPercent(100); got != 400 {
		t.Errorf("GOGC: got %d, want 400", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 3<<28 {
		t.Errorf("memory limit: got %d, want %d (3/4 of 1 GiB)", got, 3<<28)
	}
}
