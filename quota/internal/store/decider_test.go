package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/admitgo/admit/quota"
)

func TestDecide(t *testing.T) {
	rule := quota.Rule{Name: "signup", Limit: 5, Window: time.Minute}
	ok := quota.Decision{Allowed: true, Remaining: 4, Limit: 5, Window: time.Minute}
	boom := errors.New("connection refused")
	tests := []struct {
		name      string
		failure   quota.Failure
		decide    func(context.Context) (quota.Decision, error)
		want      quota.Decision
		wantErr   error
		wantInErr string
	}{
		{"success passes through", quota.FailClosed, func(context.Context) (quota.Decision, error) { return ok, nil }, ok, nil, ""},
		{"failure fails closed", quota.FailClosed, func(context.Context) (quota.Decision, error) { return quota.Decision{}, boom },
			quota.Decision{Limit: 5, Window: time.Minute, RetryAfter: time.Minute}, boom, `teststore: rule "signup"`},
		{"failure fails open", quota.FailOpen, func(context.Context) (quota.Decision, error) { return quota.Decision{}, boom },
			quota.Decision{Allowed: true, Remaining: 5, Limit: 5, Window: time.Minute}, boom, `teststore: rule "signup"`},
		{"the timeout bounds the call", quota.FailClosed, func(ctx context.Context) (quota.Decision, error) {
			<-ctx.Done()
			return quota.Decision{}, ctx.Err()
		}, quota.Decision{Limit: 5, Window: time.Minute, RetryAfter: time.Minute}, context.DeadlineExceeded, "deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decider{Prefix: "teststore", Failure: tt.failure, Timeout: 10 * time.Millisecond}
			got, err := d.Decide(context.Background(), rule, tt.decide)
			if got != tt.want {
				t.Errorf("decision: got %+v, want %+v", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr != nil && !strings.Contains(err.Error(), tt.wantInErr)) {
				t.Errorf("error: got %v, want %v containing %q", err, tt.wantErr, tt.wantInErr)
			}
		})
	}
}

func TestDecideCounts(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "test")
	if err != nil {
		t.Fatal(err)
	}
	rule := quota.Rule{Name: "r", Limit: 5, Window: time.Minute}
	d := Decider{Prefix: "teststore", Failure: quota.FailOpen, Timeout: time.Second, Metrics: m}
	d.Decide(context.Background(), rule, func(context.Context) (quota.Decision, error) {
		return quota.Decision{Allowed: true}, nil
	})
	d.Decide(context.Background(), rule, func(context.Context) (quota.Decision, error) {
		return quota.Decision{}, errors.New("down")
	})
	decisions, latencies := collect(t, reader)
	if want := map[string]int64{"test/allowed": 1, "test/failed_open": 1}; fmt.Sprint(decisions) != fmt.Sprint(want) {
		t.Errorf("decisions: got %v, want %v", decisions, want)
	}
	if latencies["test"] != 2 {
		t.Errorf("latency samples: got %d, want 2", latencies["test"])
	}
}
