package testneed

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that notes how a test ended instead of ending
// it.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.failed = format }
func (r *recorder) Skipf(format string, a ...any)  { r.skipped = format }

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		env        string
		fail, skip bool
	}{
		{"", false, true},
		{"0", false, true},
		{"1", true, false},
	} {
		t.Setenv(EnvRequire, tc.env)
		r := &recorder{TB: t}
		Missing(r, "redis-server not found: apt-get install redis-server")
		if (r.failed != "") != tc.fail || (r.skipped != "") != tc.skip {
			t.Errorf("%s=%q: failed %q, skipped %q; want fail %v, skip %v", EnvRequire, tc.env, r.failed, r.skipped, tc.fail, tc.skip)
		}
		if msg := r.failed + r.skipped; !strings.HasPrefix(msg, "redis-server not found") {
			t.Errorf("%s=%q: message %q, want the caller's", EnvRequire, tc.env, msg)
		}
	}
}
