package quota

import (
	"cmp"
	"errors"
	"fmt"
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
		{"token bucket", Rule{Name: "a", Limit: 1, Window: time.Second, Algorithm: TokenBucket, Burst: 5}, ""},
		{"zero", Rule{Name: "a"}, "Limit"},
		{"negative limit", Rule{Name: "a", Limit: -1, Window: time.Second}, "Limit"},
		{"zero window", Rule{Name: "a", Limit: 1}, "Window"},
		{"negative window", Rule{Name: "a", Limit: 1, Window: -time.Second}, "Window"},
		{"unknown algorithm", Rule{Name: "a", Limit: 1, Window: time.Second, Algorithm: 7}, "Algorithm Algorithm(7), want FixedWindow or TokenBucket"},
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
	for a, want := range map[Algorithm]string{FixedWindow: "fixed-window", TokenBucket: "token-bucket", 9: "Algorithm(9)"} {
		if got := a.String(); got != want {
			t.Errorf("Algorithm(%d).String(): got %q, want %q", uint8(a), got, want)
		}
	}
}

// TestParseAlgorithm reads what String writes, and String's older
// spellings, and refuses anything else naming it.
func TestParseAlgorithm(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Algorithm
		err  string
	}{
		{"fixed-window", FixedWindow, ""},
		{"token-bucket", TokenBucket, ""},
		{"fixed_window", FixedWindow, ""},
		{"gcra", TokenBucket, ""},
		{"GCRA", 0, `quota: unknown algorithm "GCRA": want fixed-window or token-bucket`},
		{"", 0, `quota: unknown algorithm "": want fixed-window or token-bucket`},
		{"Algorithm(9)", 0, `quota: unknown algorithm "Algorithm(9)": want fixed-window or token-bucket`},
	} {
		got, err := ParseAlgorithm(tt.in)
		if got != tt.want || fmt.Sprint(err) != cmp.Or(tt.err, "<nil>") {
			t.Errorf("ParseAlgorithm(%q): got %v, %v; want %v, %s", tt.in, got, err, tt.want, cmp.Or(tt.err, "no error"))
		}
	}
	if GCRA != TokenBucket {
		t.Error("GCRA, TokenBucket's older name, is another algorithm")
	}
}

// FuzzParseAlgorithm: what ParseAlgorithm reads, String writes back in one
// of the spellings it read.
func FuzzParseAlgorithm(f *testing.F) {
	for _, seed := range []string{"fixed-window", "token-bucket", "gcra", "fixed_window", "Token-Bucket", "x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAlgorithm(s)
		if err != nil {
			return
		}
		if back, err := ParseAlgorithm(a.String()); err != nil || back != a {
			t.Fatalf("%q read as %v, which reads back as %v, %v", s, a, back, err)
		}
	})
}
