package quotatest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

// policies are the failure policies caller errors are tried under.
var policies = []struct {
	name   string
	policy quota.Failure
}{
	{"fail closed", quota.FailClosed},
	{"fail open", quota.FailOpen},
}

// refused checks a caller error: an error wrapping want, the decision every
// store gives a caller error, and no trace of the subject in the error.
func refused(t *testing.T, s quota.Charger, rule quota.Rule, subject string, n int, want error) {
	t.Helper()
	d, err := s.AllowN(context.Background(), rule, subject, n)
	if !errors.Is(err, want) {
		t.Errorf("error: got %v, want %v", err, want)
	}
	if wantD := (quota.Decision{RetryAfter: rule.Window, Limit: rule.Limit, Window: rule.Window}); d != wantD {
		t.Errorf("decision: got %+v, want %+v (refused whatever the policy)", d, wantD)
	}
	if err != nil && subject != "" && strings.Contains(err.Error(), subject) {
		t.Errorf("error %q repeats the subject", err)
	}
}

// callerErrors wants an invalid rule or cost refused whatever the policy,
// and the call not counted: the subject's next valid call sees a fresh
// bucket.
func (o opener) callerErrors(t *testing.T) {
	subject := quota.Subject("x")
	ok := quota.Rule{Name: "r", Limit: 5, Window: time.Minute}
	tests := []struct {
		name string
		rule quota.Rule
		n    int
	}{
		{"zero rule", quota.Rule{}, 1},
		{"zero limit", quota.Rule{Name: "r", Window: time.Minute}, 1},
		{"negative limit", quota.Rule{Name: "r", Limit: -1, Window: time.Minute}, 1},
		{"zero window", quota.Rule{Name: "r", Limit: 5}, 1},
		{"negative window", quota.Rule{Name: "r", Limit: 5, Window: -time.Minute}, 1},
		{"unknown algorithm", quota.Rule{Name: "r", Limit: 5, Window: time.Minute, Algorithm: 7}, 1},
		{"negative burst", quota.Rule{Name: "r", Limit: 5, Window: time.Minute, Algorithm: quota.TokenBucket, Burst: -1}, 1},
		{"negative cost", ok, -1},
		{"negative cost, gcra", quota.Rule{Name: "r", Limit: 5, Window: time.Minute, Algorithm: quota.TokenBucket}, -1},
	}
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			s, _, _ := o.both(t, t0, p.policy)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					refused(t, s, tt.rule, subject, tt.n, quota.ErrRule)
				})
			}
			for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
				rule := ok
				rule.Algorithm = alg
				if d := allowN(t, s, rule, subject, 1); !d.Allowed || d.Remaining != 4 {
					t.Errorf("%v after caller errors: got %+v, want allowed with 4 remaining", alg, d)
				}
			}
		})
	}
}

// subjectsFromSubjectOnly wants every subject that did not come from
// quota.Subject refused whatever the policy, and those that did counted.
func (o opener) subjectsFromSubjectOnly(t *testing.T) {
	a := quota.Subject("alice@example.com")
	if b := quota.Subject("alice@example.com"); a != b {
		t.Errorf("Subject is not stable: got %q and %q", a, b)
	}
	tests := []struct {
		name    string
		subject string
	}{
		{"raw email", "alice@example.com"},
		{"raw ip", "203.0.113.7"},
		{"raw token", "sk_live_0123456789abcdef01234567"}, // 32 characters, not hex
		{"uppercase hex", strings.ToUpper(a)},
		{"empty", ""},
		{"too short", a[:quota.SubjectLen-1]},
		{"too long", a + "0"},
	}
	for _, p := range policies {
		t.Run(p.name, func(t *testing.T) {
			s, _, _ := o.both(t, t0, p.policy)
			for _, alg := range []quota.Algorithm{quota.FixedWindow, quota.TokenBucket} {
				rule := quota.Rule{Name: "r", Limit: 5, Window: time.Minute, Algorithm: alg}
				for _, tt := range tests {
					t.Run(alg.String()+"/"+tt.name, func(t *testing.T) {
						refused(t, s, rule, tt.subject, 1, quota.ErrSubject)
					})
				}
				if d := allowN(t, s, rule, a, 1); !d.Allowed || d.Remaining != 4 {
					t.Errorf("%v with a subject from quota.Subject: got %+v, want allowed with 4 remaining", alg, d)
				}
			}
		})
	}
}
