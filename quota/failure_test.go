package quota

import (
	"errors"
	"testing"
	"time"
)

func TestFailureFail(t *testing.T) {
	rule := Rule{Name: "r", Limit: 10, Window: time.Minute}
	errDown := errors.New("store down")
	closed := Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}
	tests := []struct {
		name    string
		failure Failure
		want    Decision
	}{
		{"fail closed", FailClosed, closed},
		{"fail open", FailOpen, Decision{Allowed: true, Remaining: 10, Limit: 10, Window: time.Minute}},
		{"zero value fails closed", FailDefault, closed},
		{"error fails closed at the store", FailError, closed},
		{"local fails closed at the store", FailLocal, closed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.failure.Fail(rule, errDown)
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if err != errDown {
				t.Errorf("error: got %v, want %v", err, errDown)
			}
		})
	}
}

// TestParseFailure holds the one parse to the one spelling: every
// constant but the zero value reads back from its String, and nothing else
// parses.
func TestParseFailure(t *testing.T) {
	for _, f := range []Failure{FailError, FailClosed, FailOpen, FailLocal} {
		got, err := ParseFailure(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFailure(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	for _, s := range []string{"", "default", "Closed", "fail-open", "Failure(9)"} {
		if f, err := ParseFailure(s); err == nil {
			t.Errorf("ParseFailure(%q) = %v, want an error", s, f)
		}
	}
}

func TestFailureOr(t *testing.T) {
	if got := FailDefault.Or(FailError); got != FailError {
		t.Errorf("FailDefault.Or(FailError) = %v, want error", got)
	}
	if got := FailOpen.Or(FailError); got != FailOpen {
		t.Errorf("FailOpen.Or(FailError) = %v, want open", got)
	}
	if Failure(9).Valid() || !FailLocal.Valid() {
		t.Error("Valid: want the constants only")
	}
}

// TestPolicyIsFailure keeps the former name compiling: Policy is Failure.
func TestPolicyIsFailure(t *testing.T) {
	var p Policy = FailOpen
	var f Failure = p
	if f != FailOpen {
		t.Errorf("got %v, want open", f)
	}
}
