package quota

import (
	"strings"
	"testing"
)

func TestSubject(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		// The first 16 bytes of well-known SHA-256 digests.
		{"empty", "", "e3b0c44298fc1c149afbf4c8996fb924"},
		{"abc", "abc", "ba7816bf8f01cfea414140de5dae2223"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Subject(tt.raw); got != tt.want {
				t.Errorf("Subject(%q): got %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestSubjectShape(t *testing.T) {
	for _, raw := range []string{"", "203.0.113.7", "2001:db8::/64", "user@example.com", "tok_" + strings.Repeat("x", 500), "\x00\xff"} {
		s := Subject(raw)
		if len(s) != SubjectLen {
			t.Errorf("len(Subject(%q)): got %d, want %d", raw, len(s), SubjectLen)
		}
		if strings.Trim(s, "0123456789abcdef") != "" {
			t.Errorf("Subject(%q): got %q, want lowercase hex", raw, s)
		}
		if again := Subject(raw); again != s {
			t.Errorf("Subject(%q) not stable: got %q, then %q", raw, s, again)
		}
	}
	if a, b := Subject("a"), Subject("b"); a == b {
		t.Errorf("Subject(a) == Subject(b) == %q", a)
	}
}
