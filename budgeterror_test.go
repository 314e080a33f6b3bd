package admit

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/admitgo/admit/quota"
)

// A budget whose fields do not combine, or a route that cannot spend from
// its groups' budgets, is refused once, by the door, as a *BudgetError
// whose reason names fields in words a front can rewrite: Go's in Error,
// the front's through InWords.
func TestBudgetErrorNamesFieldsInEitherWords(t *testing.T) {
	header := Budget{Like: GroupLink, Key: Key{Header: "X-T"}}
	onStore := Budget{Like: GroupLink, Burst: 40, SharedBurst: 8, Store: failing{}, Replicas: 4}
	for name, tc := range map[string]struct {
		budgets map[Group]Budget
		route   []Group // nil: the budgets alone are refused
		cost    int
		group   Group
		field   string
		goWord  string
	}{
		"fixed window without a window": {budgets: map[Group]Budget{"g": {Algorithm: FixedWindow, Limit: 5}}, group: "g", field: "Limit",
			goWord: `admit: group "g": a fixed-window group needs a positive Limit and Window`},
		"window on a token bucket": {budgets: map[Group]Budget{"g": {Rate: 1, Burst: 1, Window: time.Second}}, group: "g", field: "Limit",
			goWord: `admit: group "g": Limit and Window belong to Algorithm FixedWindow`},
		"no amounts": {budgets: map[Group]Budget{"g": {Burst: 3}}, group: "g", field: "Rate",
			goWord: `admit: group "g": a group of its own needs its Rate and Burst (or Algorithm FixedWindow with a Limit and Window), or Like: webhook, link or health`},
		"like an unknown group": {budgets: map[Group]Budget{"g": {Like: "api"}}, group: "g", field: "Like",
			goWord: `admit: group "g": Like "api", want a built-in group (webhook, link or health)`},
		"prefix on a header key": {budgets: map[Group]Budget{"g": {Like: GroupLink, Key: Key{Header: "X-T", IPv4Prefix: 24}}}, group: "g", field: "Key.IPv4Prefix",
			goWord: `admit: group "g": Key.IPv4Prefix and Key.IPv6Prefix widen a key by the client's address (a Key without Header, PathValue or Global), and this key is another`},
		"cost above the burst": {route: []Group{GroupLink}, cost: 21, group: GroupLink, field: "Cost",
			goWord: `admit: route [link]: Cost 21 is more than group "link" ever admits (its Burst is 20)`},
		"cost above a fixed window's limit": {budgets: map[Group]Budget{"g": {Algorithm: FixedWindow, Limit: 3, Window: time.Minute}}, route: []Group{GroupLink, "g"}, cost: 4, group: "g", field: "Cost",
			goWord: `admit: route [link g]: Cost 4 is more than group "g" ever admits (its Limit is 3)`},
		"cost above the shared burst": {budgets: map[Group]Budget{"g": {Like: GroupLink, SharedBurst: 5}}, route: []Group{"g"}, cost: 6, group: "g", field: "Cost",
			goWord: `admit: route [g]: Cost 6 is more than group "g" admits from its shared bucket, which serves clients once its table is full (its SharedBurst is 5)`},
		"cost above a replica's shared burst": {budgets: map[Group]Budget{"g": onStore}, route: []Group{"g"}, cost: 3, group: "g", field: "Cost",
			goWord: `admit: route [g]: Cost 3 is more than group "g" admits from its shared bucket on one replica while the store is down (SharedBurst 8 divided by Replicas 4 is 2)`},
		"cost above a replica's burst": {budgets: map[Group]Budget{"g": {Like: GroupLink, Burst: 40, SharedBurst: 80, Store: failing{}, Replicas: 4}}, route: []Group{"g"}, cost: 11, group: "g", field: "Cost",
			goWord: `admit: route [g]: Cost 11 is more than group "g" admits on one replica while the store is down (Burst 40 divided by Replicas 4 is 10)`},
		"every key chosen by the client": {budgets: map[Group]Budget{"g": header}, route: []Group{"g"}, field: "Key",
			goWord: `admit: route [g]: every limit of the route is keyed by a value the client chooses (Key.Header or Key.PathValue, without Key.Authenticated), so a forger gets a fresh budget per value: stack a limit keyed by the client's address, or set Key.Authenticated on a group whose value a layer in front of admit (a gateway, an authenticating proxy) checks first: a check in the app runs only after admit has admitted the request, so it needs the limit keyed by the client's address`},
		"unknown group": {route: []Group{"nope"}, group: "nope", field: "Groups",
			goWord: `admit: route [nope]: unknown group "nope" (known: [health link webhook])`},
	} {
		d, err := New(Config{Budgets: tc.budgets})
		if tc.route != nil {
			if err != nil {
				t.Fatalf("%s: New: %v", name, err)
			}
			_, err = d.Handler(Route{Groups: tc.route, Cost: tc.cost}, http.NotFoundHandler())
		}
		if err == nil || err.Error() != tc.goWord {
			t.Errorf("%s: got %v, want %q", name, err, tc.goWord)
			continue
		}
		var be *BudgetError
		if !errors.As(err, &be) || be.Group != tc.group || be.Field != tc.field || !slices.Equal(be.Route, tc.route) {
			t.Errorf("%s: got %#v, want group %q, field %q, route %v", name, be, tc.group, tc.field, tc.route)
			continue
		}
		lower := be.InWords(func(n string) string { return "<" + n + ">" })
		if strings.ContainsAny(strings.ReplaceAll(strings.ReplaceAll(lower, "<", ""), ">", ""), "{}") || strings.Contains(tc.goWord, tc.field+" ") != strings.Contains(lower, "<"+tc.field+">") {
			t.Errorf("%s: InWords wrote %q", name, lower)
		}
		if got := be.InWords(nil); !strings.HasSuffix(tc.goWord, ": "+got) {
			t.Errorf("%s: InWords(nil) wrote %q, want the end of %q", name, got, tc.goWord)
		}
	}
}

// TestStoreRefusalIsARuleError: a budget its store refuses is a
// *BudgetError about the group that wraps the store's *quota.RuleError,
// so a front words both from values.
func TestStoreRefusalIsARuleError(t *testing.T) {
	_, err := New(Config{Budgets: map[Group]Budget{"g": {Algorithm: FixedWindow, Limit: 5, Window: time.Minute, Store: refusing{}}}})
	var be *BudgetError
	var re *quota.RuleError
	if !errors.As(err, &be) || be.Group != "g" || be.Field != "Limit" || !errors.As(err, &re) {
		t.Fatalf("got %#v, want a *BudgetError of group g wrapping a *quota.RuleError", err)
	}
	want := `admit: group "g": Limit 5 per Window 1m0s cannot be decided on the shared store: quota: invalid rule "admit.g": no rule at all`
	if err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if got, want := be.InWords(nil), "Limit 5 per Window 1m0s cannot be decided on the shared store"; got != want {
		t.Errorf("InWords: got %q, want %q (the store's reason is the wrapped error's)", got, want)
	}
}

// refusing is a store that refuses every rule.
type refusing struct{ failing }

func (refusing) CheckRule(r quota.Rule) error {
	return &quota.RuleError{Rule: r.Name, Reason: "no rule at all"}
}

// TestNewReportsEveryBadGroup joins one error for each group refused, in
// the order of their names, so that a front can pick the one its user
// gave first.
func TestNewReportsEveryBadGroup(t *testing.T) {
	_, err := New(Config{Budgets: map[Group]Budget{
		"zz": {Algorithm: FixedWindow, Limit: 5},
		"aa": {Like: GroupLink, MaxClients: -1},
	}})
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 2 {
		t.Fatalf("got %v, want one error for each of two groups", err)
	}
	if got := joined.Unwrap()[0].Error(); !strings.HasPrefix(got, `admit: group "aa": MaxClients -1`) {
		t.Errorf("first: got %q, want aa's MaxClients", got)
	}
	if got := joined.Unwrap()[1].Error(); !strings.HasPrefix(got, `admit: group "zz": a fixed-window group needs`) {
		t.Errorf("second: got %q, want zz's window", got)
	}
}
