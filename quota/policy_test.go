package quota

import (
	"errors"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	rule := Rule{Name: "r", Limit: 10, Window: time.Minute}
	errDown := errors.New("store down")
	var zero Policy
	tests := []struct {
		name   string
		policy Policy
		want   Decision
	}{
		{"fail closed", FailClosed, Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
		{"fail open", FailOpen, Decision{Allowed: true, Remaining: 10, Limit: 10, Window: time.Minute}},
		{"zero policy fails closed", zero, Decision{RetryAfter: time.Minute, Limit: 10, Window: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.policy.Fail(rule, errDown)
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if err != errDown {
				t.Errorf("error: got %v, want %v", err, errDown)
			}
		})
	}
}
