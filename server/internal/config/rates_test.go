package config

import (
	"math"
	"strings"
	"testing"

	"golang.org/x/time/rate"
)

// TestParseRate reads each spelling operators bring from nginx and
// httprate, and refuses nonsense with the value quoted.
func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    rate.Limit
		wantErr string // part of the error; "" for none
	}{
		{"10r/s", 10, ""},
		{"600r/m", 10, ""},
		{"5/s", 5, ""},
		{"100/m", rate.Limit(100.0 / 60), ""},
		{"1000/h", rate.Limit(1000.0 / 3600), ""},
		{"1r/h", rate.Limit(1.0 / 3600), ""},
		{"2.5", 2.5, ""},
		{"0.001", 0.001, ""},
		{"1e3", 1000, ""},
		{"0.5/s", 0.5, ""},
		{".inf", rate.Inf, ""},
		{"+.Inf", rate.Inf, ""},
		{"0", 0, `"0" is not a positive rate`},
		{"0r/s", 0, `"0r/s" is not a positive rate`},
		{"-5/s", 0, `"-5/s" is not a positive rate`},
		{"-1", 0, `"-1" is not a positive rate`},
		{"1e-400", 0, `"1e-400" is not a positive rate`},
		{"10r/d", 0, `"10r/d": unknown unit "d": want s, m or h`},
		{"10/sec", 0, `unknown unit "sec"`},
		{"10/", 0, `unknown unit ""`},
		{"1e400/s", 0, `"1e400/s" is too large a rate`},
		{"1e308/h", rate.Limit(1e308 / 3600), ""},
		{"NaN", 0, `"NaN" is not a rate: want a number per second, N/s, N/m or N/h`},
		{"nan/s", 0, `"nan/s" is not a rate`},
		{"inf", 0, `"inf" is not a rate`},
		{"0x10", 0, `"0x10" is not a rate`},
		{"1_000", 0, `"1_000" is not a rate`},
		{"r/s", 0, `"r/s" is not a rate`},
		{"10rr/s", 0, `"10rr/s" is not a rate`},
		{"10 r/s", 0, `"10 r/s" is not a rate`},
		{"/s", 0, `"/s" is not a rate`},
		{"", 0, `"" is not a rate`},
		{"1/s/s", 0, `"1/s/s" is not a rate`},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ParseRate(%q): %v, want %v", tt.in, err, tt.want)
		case tt.wantErr == "" && got != tt.want:
			t.Errorf("ParseRate(%q) = %v, want %v", tt.in, got, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseRate(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
		}
	}
}

// TestRateText writes each rate in its canonical form, and the summary
// says what a rate per minute or hour makes a second.
func TestRateText(t *testing.T) {
	tests := []struct {
		r             rate.Limit
		text, summary string
	}{
		{10, "10", "10/s"},
		{0.5, "0.5", "0.5/s"},
		{0.001, "0.001", "0.001/s"},
		{rate.Limit(100.0 / 60), "100/m", "100/m = 1.667/s"},
		{rate.Limit(1000.0 / 3600), "1000/h", "1000/h = 0.2778/s"},
		{rate.Limit(1.0 / 3), "20/m", "20/m = 0.3333/s"},
		{rate.Limit(1.0 / 7), "0.14285714285714285", "0.14285714285714285/s"},
		{rate.Inf, ".inf", "no limit"},
	}
	for _, tt := range tests {
		if got := RateText(tt.r); got != tt.text {
			t.Errorf("RateText(%v) = %q, want %q", tt.r, got, tt.text)
		}
		if got := RateSummary(tt.r); got != tt.summary {
			t.Errorf("RateSummary(%v) = %q, want %q", tt.r, got, tt.summary)
		}
	}
}

// FuzzParseRate: whatever ParseRate takes is a positive rate that
// RateText writes back to the same rate.
func FuzzParseRate(f *testing.F) {
	for _, seed := range []string{
		"10r/s", "600r/m", "100/m", "1000/h", "2.5", ".inf", // the spellings operators write
		"0r/s", "-1/s", "10r/d", "1e400/s", "NaN", "0x1p-2", // refused
		"1e-320/h", "0.14285714285714285", "1e15/m", // edges of RateText's forms
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			if !strings.Contains(err.Error(), `"`) {
				t.Fatalf("ParseRate(%q): %v does not quote the value", s, err)
			}
			return
		}
		if !(r > 0) || math.IsNaN(float64(r)) {
			t.Fatalf("ParseRate(%q) = %v, want a positive rate", s, r)
		}
		text := RateText(r)
		back, err := ParseRate(text)
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %v, written %q, read back %v, %v", s, r, text, back, err)
		}
	})
}
