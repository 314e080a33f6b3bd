package quota

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRuleValidate(t *testing.T) {
	tests := []struct {
		name  string
		rule  Rule
		field string // named in the error; "" when valid
	}{
		{"fixed window", Rule{Name: "a", Limit: 1, Window: time.Second}, ""},
		{"gcra", Rule{Name: "a", Limit: 1, Window: time.Second, Algorithm: GCRA, Burst: 5}, ""},
		{"zero", Rule{Name: "a"}, "Limit"},
		{"negative limit", Rule{Name: "a", Limit: -1, Window: time.Second}, "Limit"},
		{"zero window", Rule{Name: "a", Limit: 1}, "Window"},
		{"negative window", Rule{Name: "a", Limit: 1, Window: -time.Second}, "Window"},
		{"unknown algorithm", Rule{Name: "a", Limit: 1, Window: time.Second, Algorithm: 7}, "Algorithm Algorithm(7)"},
		{"negative burst", Rule{Name: "a", Limit: 1, Window: time.Second, Burst: -1}, "Burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rule.Validate()
			if tt.field == "" {
				if err != nil {
					t.Errorf("Validate: got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrRule) {
				t.Fatalf("Validate: got %v, want %v", err, ErrRule)
			}
			if !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), `"a"`) {
				t.Errorf("Validate: got %q, want the rule name and %s", err, tt.field)
			}
			// A caller words the refusal from the value, not the text.
			var re *RuleError
			if !errors.As(err, &re) || re.Rule != "a" || !strings.HasPrefix(re.Reason, tt.field) {
				t.Errorf("Validate: got %#v, want a *RuleError of rule \"a\" whose reason starts with %s", err, tt.field)
			}
		})
	}
}

func TestBurstOrLimit(t *testing.T) {
	tests := []struct {
		name string
		rule Rule
		want int
	}{
		{"default", Rule{Limit: 10}, 10},
		{"set", Rule{Limit: 10, Burst: 3}, 3},
		{"above limit", Rule{Limit: 10, Burst: 30}, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.BurstOrLimit(); got != tt.want {
				t.Errorf("BurstOrLimit: got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestAlgorithmString(t *testing.T) {
	for a, want := range map[Algorithm]string{FixedWindow: "fixed_window", GCRA: "gcra", 9: "Algorithm(9)"} {
		if got := a.String(); got != want {
			t.Errorf("Algorithm(%d).String(): got %q, want %q", uint8(a), got, want)
		}
	}
}
