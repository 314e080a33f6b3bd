package quota

import (
	"errors"
	"strings"
	"testing"
	"time"
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
		if err := CheckSubject(s); err != nil {
			t.Errorf("CheckSubject(Subject(%q)): got %v, want nil", raw, err)
		}
		if again := Subject(raw); again != s {
			t.Errorf("Subject(%q) not stable: got %q, then %q", raw, s, again)
		}
	}
	if a, b := Subject("a"), Subject("b"); a == b {
		t.Errorf("Subject(a) == Subject(b) == %q", a)
	}
}

func TestCheckSubjectRefusesRaw(t *testing.T) {
	tests := []struct {
		name    string
		subject string
	}{
		{"empty", ""},
		{"ip", "203.0.113.7"},
		{"email", "someone@example.com"},
		{"token", "sk_live_0123456789abcdef0123456789"},
		{"uppercase hex", strings.ToUpper(Subject("x"))},
		{"too short", Subject("x")[:31]},
		{"too long", Subject("x") + "0"},
		{"full digest", Subject("x") + Subject("y")},
		{"not hex", "g" + Subject("x")[1:]},
		{"colon", Subject("x")[:31] + ":"},
		{"unicode", "é" + Subject("x")[2:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSubject(tt.subject)
			if !errors.Is(err, ErrSubject) {
				t.Fatalf("CheckSubject(%q): got %v, want %v", tt.subject, err, ErrSubject)
			}
			if tt.subject != "" && strings.Contains(err.Error(), tt.subject) {
				t.Errorf("error %q repeats the rejected subject", err)
			}
			if !strings.Contains(err.Error(), "quota.Subject") {
				t.Errorf("error %q does not say to call quota.Subject", err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	ok := Rule{Name: "r", Limit: 1, Window: time.Second}
	tests := []struct {
		name    string
		rule    Rule
		subject string
		n       int
		want    error
	}{
		{"valid", ok, Subject("x"), 1, nil},
		{"look", ok, Subject("x"), 0, nil},
		{"negative cost", ok, Subject("x"), -1, ErrRule},
		{"zero rule", Rule{}, Subject("x"), 1, ErrRule},
		{"raw subject", ok, "203.0.113.7", 1, ErrSubject},
		{"rule checked first", Rule{}, "raw", 1, ErrRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.rule, tt.subject, tt.n)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Check: got %v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzCheckSubject checks that CheckSubject accepts exactly the strings
// Subject can return, and every string Subject does return.
func FuzzCheckSubject(f *testing.F) {
	f.Add("")                                  // empty
	f.Add("203.0.113.7")                       // a raw IP
	f.Add("e3b0c44298fc1c149afbf4c8996fb924")  // a subject
	f.Add("E3B0C44298FC1C149AFBF4C8996FB924")  // uppercase
	f.Add("e3b0c44298fc1c149afbf4c8996fb92")   // one short
	f.Add("e3b0c44298fc1c149afbf4c8996fb9240") // one long
	f.Fuzz(func(t *testing.T, s string) {
		if err := CheckSubject(Subject(s)); err != nil {
			t.Fatalf("CheckSubject(Subject(%q)): %v", s, err)
		}
		valid := len(s) == SubjectLen && strings.Trim(s, "0123456789abcdef") == ""
		if err := CheckSubject(s); (err == nil) != valid {
			t.Fatalf("CheckSubject(%q): got %v, want valid=%v", s, err, valid)
		}
	})
}
