package quota

import (
	"errors"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	rule := Rule{Name: "r", Limit: 10, Window: time.Minute}
	errDown := errors.New("store down")
	tests := []struct {
		name string
		fail func() (Decision, error)
		want Decision
	}{
		{"fail closed", func() (Decision, error) { return FailClosed.Fail(rule, errDown) },
			Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
		{"fail open", func() (Decision, error) { return FailOpen.Fail(rule, errDown) },
			Decision{Allowed: true, Remaining: 10, Limit: 10, Window: time.Minute}},
		{"zero policy fails closed", func() (Decision, error) { var p Policy; return p.Fail(rule, errDown) },
			Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
		{"PolicyFor(false)", func() (Decision, error) { return PolicyFor(false).Fail(rule, errDown) },
			Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
		{"PolicyFor(true)", func() (Decision, error) { return PolicyFor(true).Fail(rule, errDown) },
			Decision{Allowed: true, Remaining: 10, Limit: 10, Window: time.Minute}},
		{"refuse", func() (Decision, error) { return Refuse(rule, errDown) },
			Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.fail()
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if err != errDown {
				t.Errorf("error: got %v, want %v", err, errDown)
			}
		})
	}
}
