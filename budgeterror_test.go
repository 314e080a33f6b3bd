package admit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A budget whose fields do not combine is refused once, by the door, in
// words a front can rewrite: Go's by default, the front's through InWords.
func TestFieldErrorsNameFieldsInEitherWords(t *testing.T) {
	for name, tc := range map[string]struct {
		b      Budget
		goWord string
	}{
		"fixed window without a window": {Budget{Algorithm: FixedWindow, Limit: 5}, `admit: group "g": a fixed-window group needs a positive Limit and Window`},
		"window on a token bucket":      {Budget{Rate: 1, Burst: 1, Window: time.Second}, `admit: group "g": Limit and Window belong to Algorithm FixedWindow`},
		"no amounts":                    {Budget{Burst: 3}, `admit: group "g": a group of its own needs its Rate and Burst (or Algorithm FixedWindow with a Limit and Window), or Like: webhook, link or health`},
		"prefix on a header key":        {Budget{Like: GroupLink, Key: Key{Header: "X-T", IPv4Prefix: 24}}, `admit: group "g": Key.IPv4Prefix and Key.IPv6Prefix widen a key by the client's address (a Key without Header, PathValue or Global), and this key is another`},
	} {
		_, err := New(Config{Budgets: map[Group]Budget{"g": tc.b}})
		if err == nil || err.Error() != tc.goWord {
			t.Errorf("%s: got %v, want %q", name, err, tc.goWord)
			continue
		}
		var fe interface {
			Group() Group
			InWords(func(string) string) string
		}
		if !errors.As(err, &fe) || fe.Group() != "g" {
			t.Errorf("%s: %v names no group's fields", name, err)
			continue
		}
		lower := fe.InWords(func(n string) string { return "<" + n + ">" })
		if strings.ContainsAny(strings.ReplaceAll(strings.ReplaceAll(lower, "<", ""), ">", ""), "{}") || !strings.Contains(lower, "<") {
			t.Errorf("%s: InWords wrote %q", name, lower)
		}
	}
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
