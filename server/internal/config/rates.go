package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// rateUnits are the units a rate may be written per, as nginx's limit_req
// (10r/s, 600r/m) and httprate (100 per time.Minute) users write them.
// ParseRate reads them and RateText writes them, from this one table, so
// a spelling cannot drift between the two.
var rateUnits = []struct {
	name string
	per  time.Duration
}{
	{"s", time.Second},
	{"m", time.Minute},
	{"h", time.Hour},
}

// noRate is the file's spelling of no limit, as YAML spells infinity.
const noRate = ".inf"

// rateWords ends every refusal of a rate with the spellings it takes.
const rateWords = "want a number per second, N/s, N/m or N/h (nginx's Nr/s, Nr/m), or .inf for no limit"

// ParseRate reads a rate as the config file writes it: a number of tokens
// per second ("2.5"), a count per unit ("5/s", "100/m", "1000/h", with
// nginx's "r" before the slash allowed: "10r/s", "600r/m"), or .inf (in
// any of YAML's spellings of it) for no limit. The string sets the rate
// only: a group's burst is its own field. A rate must be positive and
// finite; the error quotes the value.
func ParseRate(v string) (rate.Limit, error) {
	switch v {
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return rate.Inf, nil
	}
	count, per := v, time.Second
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		count = strings.TrimSuffix(v[:i], "r")
		unit := v[i+1:]
		per = 0
		for _, u := range rateUnits {
			if unit == u.name {
				per = u.per
			}
		}
		if per == 0 {
			return 0, fmt.Errorf("%q: unknown unit %q: want s, m or h (such as 10r/s or 100/m)", v, unit)
		}
	}
	n, err := parseDecimal(count)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is too large a rate (.inf for no limit)", v)
	case err != nil:
		return 0, fmt.Errorf("%q is not a rate: %s", v, rateWords)
	case !(n > 0):
		return 0, fmt.Errorf("%q is not a positive rate (.inf for no limit)", v)
	}
	r := n / per.Seconds()
	if r == 0 || math.IsInf(r, 0) {
		return 0, fmt.Errorf("%q is out of range: %s", v, rateWords)
	}
	return rate.Limit(r), nil
}

// parseDecimal reads a plain decimal number ("10", "2.5", "1e3"): not the
// hexadecimal, underscored, Inf or NaN forms strconv.ParseFloat also takes,
// so that what the file takes is what an operator would read as a number.
func parseDecimal(s string) (float64, error) {
	if s == "" || strings.Trim(s, "0123456789.eE+-") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(s, 64)
}

// RateText is a rate as the config file spells it, the form ParseRate
// reads back to the same rate: .inf for no limit; tokens per second as a
// bare number where it is a short one ("10", "0.5"), as the file has
// always taken them; otherwise a whole count per unit where the rate is
// one ("100/m" rather than 1.6666666666666667); otherwise the number in
// full.
func RateText(r rate.Limit) string {
	if r == rate.Inf {
		return noRate
	}
	f := float64(r)
	bare := strconv.FormatFloat(f, 'g', -1, 64)
	if significant(bare) <= 6 {
		return bare
	}
	for _, u := range rateUnits {
		n := math.Round(f * u.per.Seconds())
		if n >= 1 && n < 1e15 && n/u.per.Seconds() == f {
			return strconv.FormatFloat(n, 'f', -1, 64) + "/" + u.name
		}
	}
	return bare
}

// significant counts the significant digits of a number strconv wrote.
func significant(s string) int {
	mantissa, _, _ := strings.Cut(s, "e")
	return len(strings.TrimLeft(strings.ReplaceAll(mantissa, ".", ""), "0"))
}

// RateSummary is a rate for people: "10/s", or a rate written per minute
// or hour with what it makes a second, "100/m = 1.667/s". The burst is
// the caller's to add.
func RateSummary(r rate.Limit) string {
	s := RateText(r)
	switch {
	case r == rate.Inf:
		return "no limit"
	case strings.Contains(s, "/"):
		return s + " = " + strconv.FormatFloat(float64(r), 'g', 4, 64) + "/s"
	}
	return s + "/s"
}
