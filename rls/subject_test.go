package rls

import (
	"strings"
	"testing"

	"github.com/admitgo/admit/quota"
)

// TestSubject holds subject to quota.Subject, whose keys the stores
// already hold.
func TestSubject(t *testing.T) {
	for _, raw := range []string{"", "abc", "5:other5:epoch5:bench14:remote_address8:10.0.1.2", strings.Repeat("x", 100_000)} {
		if got, want := subject([]byte(raw)), quota.Subject(raw); got != want {
			t.Errorf("subject(%.20q): got %q, want %q", raw, got, want)
		}
	}
}
