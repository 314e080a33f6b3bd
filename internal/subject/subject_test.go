package subject

import (
	"strings"
	"testing"
)

// TestOf holds both forms to one known digest, so a subject computed from
// bytes is the subject of the same string.
func TestOf(t *testing.T) {
	const rls = "5:other5:epoch5:bench14:remote_address8:10.0.1.2"
	if got, want := Of(rls), "f0785d064d9ea55771057fb659140496"; got != want {
		t.Errorf("Of(%q): got %q, want %q", rls, got, want)
	}
	for _, raw := range []string{"", "abc", rls, strings.Repeat("x", 100_000)} {
		if got, want := Of([]byte(raw)), Of(raw); got != want || len(got) != Len {
			t.Errorf("Of(%.20q): bytes give %q, string gives %q, want equal and %d long", raw, got, want, Len)
		}
	}
	b := []byte(rls)
	if n := testing.AllocsPerRun(100, func() { _ = Of(b) }); n != 1 {
		t.Errorf("Of(bytes): %v allocations, want 1 (the result)", n)
	}
}
