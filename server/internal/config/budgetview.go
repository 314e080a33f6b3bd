package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/admitgo/admit"
)

// shownFields returns every field of a resolved budget as the file would
// write it, in budgetFields' order.
func shownFields(v budgetView) []shownField {
	var out []shownField
	for _, f := range budgetFields {
		if v.auth && slices.Contains(authUnapplied, f.key) {
			continue
		}
		if val, ok := f.show(v); ok {
			out = append(out, shownField{f.key, val})
		}
	}
	return out
}

// JSON is the budget as the admin API writes it.
func (v budgetView) JSON() BudgetJSON { return BudgetJSON(shownFields(v)) }

type shownField struct {
	key   string
	value any
}

// BudgetText is a resolved budget as the config file spells it, a YAML map
// that could stand under the group's name.
func BudgetText(v budgetView) string {
	var f []string
	for _, sf := range shownFields(v) {
		f = append(f, fmt.Sprintf("%s: %v", sf.key, sf.value))
	}
	return "{" + strings.Join(f, ", ") + "}"
}

// BudgetJSON is a resolved budget as a JSON object in the file's words,
// its fields in budgetFields' order.
type BudgetJSON []shownField

func (b BudgetJSON) MarshalJSON() ([]byte, error) {
	out := []byte{'{'}
	for i, f := range b {
		if i > 0 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, k...), ':'), v...)
	}
	return append(out, '}'), nil
}

// fileRate is a rate as the file writes it (see RateText); the admin
// API's JSON keeps it a number of tokens per second, or ".inf".
type fileRate rate.Limit

func (r fileRate) String() string { return RateText(rate.Limit(r)) }

func (r fileRate) MarshalJSON() ([]byte, error) {
	if rate.Limit(r) == rate.Inf {
		return []byte(`".inf"`), nil
	}
	return json.Marshal(float64(r))
}

// fileDuration is a duration as the file writes it: "1h" rather than
// "1h0m0s", and 0 for none.
type fileDuration time.Duration

func (d fileDuration) String() string { return DurationText(time.Duration(d)) }

func (d fileDuration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// View returns group g's budget as door resolves it, with what c's file
// says beside it.
func (c *Config) View(door *admit.Door, g admit.Group) budgetView {
	b, _ := door.Budget(g)
	like := c.Likes[g]
	if like == "" && slices.Contains(builtInGroups, g) {
		like = g
	}
	return budgetView{b: b, name: g, like: like, interval: c.Async[g], exemptFrom: c.ExemptFrom[g], auth: c.Auth}
}
