package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

func TestCheckSubjectAcceptsSubjects(t *testing.T) {
	for _, raw := range []string{"", "203.0.113.7", "2001:db8::/64", "user@example.com", "tok_" + strings.Repeat("x", 500), "\x00\xff"} {
		if err := CheckSubject(quota.Subject(raw)); err != nil {
			t.Errorf("CheckSubject(Subject(%q)): got %v, want nil", raw, err)
		}
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
		{"uppercase hex", strings.ToUpper(quota.Subject("x"))},
		{"too short", quota.Subject("x")[:31]},
		{"too long", quota.Subject("x") + "0"},
		{"full digest", quota.Subject("x") + quota.Subject("y")},
		{"not hex", "g" + quota.Subject("x")[1:]},
		{"colon", quota.Subject("x")[:31] + ":"},
		{"unicode", "é" + quota.Subject("x")[2:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSubject(tt.subject)
			if !errors.Is(err, quota.ErrSubject) {
				t.Fatalf("CheckSubject(%q): got %v, want %v", tt.subject, err, quota.ErrSubject)
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
	ok := quota.Rule{Name: "r", Limit: 1, Window: time.Second}
	tests := []struct {
		name    string
		rule    quota.Rule
		subject string
		n       int
		want    error
	}{
		{"valid", ok, quota.Subject("x"), 1, nil},
		{"look", ok, quota.Subject("x"), 0, nil},
		{"negative cost", ok, quota.Subject("x"), -1, quota.ErrRule},
		{"zero rule", quota.Rule{}, quota.Subject("x"), 1, quota.ErrRule},
		{"raw subject", ok, "203.0.113.7", 1, quota.ErrSubject},
		{"rule checked first", quota.Rule{}, "raw", 1, quota.ErrRule},
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

func TestRefuse(t *testing.T) {
	rule := quota.Rule{Name: "r", Limit: 10, Window: time.Minute}
	errBad := errors.New("bad call")
	got, err := Refuse(rule, errBad)
	if want := (quota.Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}); got != want {
		t.Errorf("decision: got %+v, want %+v", got, want)
	}
	if err != errBad {
		t.Errorf("error: got %v, want %v", err, errBad)
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
		if err := CheckSubject(quota.Subject(s)); err != nil {
			t.Fatalf("CheckSubject(Subject(%q)): %v", s, err)
		}
		valid := len(s) == quota.SubjectLen && strings.Trim(s, "0123456789abcdef") == ""
		if err := CheckSubject(s); (err == nil) != valid {
			t.Fatalf("CheckSubject(%q): got %v, want valid=%v", s, err, valid)
		}
	})
}
