package quota

import (
	"context"
	"errors"
	"strings"
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

func TestPolicyDecide(t *testing.T) {
	rule := Rule{Name: "signup", Limit: 5, Window: time.Minute}
	ok := Decision{Allowed: true, Remaining: 4, Limit: 5, Window: time.Minute}
	boom := errors.New("connection refused")
	tests := []struct {
		name      string
		policy    Policy
		decide    func(context.Context) (Decision, error)
		want      Decision
		wantErr   error
		wantInErr string
	}{
		{"success passes through", FailClosed, func(context.Context) (Decision, error) { return ok, nil }, ok, nil, ""},
		{"failure fails closed", FailClosed, func(context.Context) (Decision, error) { return Decision{}, boom },
			Decision{Limit: 5, Window: time.Minute, RetryAfter: time.Minute}, boom, `teststore: rule "signup"`},
		{"failure fails open", FailOpen, func(context.Context) (Decision, error) { return Decision{}, boom },
			Decision{Allowed: true, Remaining: 5, Limit: 5, Window: time.Minute}, boom, `teststore: rule "signup"`},
		{"the timeout bounds the call", FailClosed, func(ctx context.Context) (Decision, error) {
			<-ctx.Done()
			return Decision{}, ctx.Err()
		}, Decision{Limit: 5, Window: time.Minute, RetryAfter: time.Minute}, context.DeadlineExceeded, "deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.policy.Decide(context.Background(), nil, rule, 10*time.Millisecond, "teststore", tt.decide)
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr != nil && !strings.Contains(err.Error(), tt.wantInErr)) {
				t.Errorf("error: got %v, want %v containing %q", err, tt.wantErr, tt.wantInErr)
			}
		})
	}
}
