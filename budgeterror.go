package admit

import (
	"fmt"
	"strconv"
	"strings"
)

// A BudgetError refuses a group's budget, or a route's use of its groups'
// budgets: a field's value, fields that do not make one budget (a fixed
// window without its Window), a route whose cost is more than a limit
// holds. [New] and [Door.Reload] return one for each group refused, joined
// by errors.Join when there are several; [Door.Handler] one for the route.
// Read it with errors.As.
//
// Its reason is written once, by the door, with each field and value named
// in braces: Error writes them as a Go program spells them, and InWords as
// the caller's function does, so that a front reading budgets from a file
// of its own words the refusal in that file's terms without checking the
// budget again or parsing the message.
type BudgetError struct {
	// Group is the group whose budget is refused, or that a route cannot
	// spend from; "" for a route refused for its groups together.
	Group Group
	// Route is the groups of the route refused; nil when the budget itself
	// is refused.
	Route []Group
	// Field is the field at fault, as Go spells it: a Budget's ("Burst",
	// "Key.IPv4Prefix") or a Route's ("Cost", "Groups"); for a route
	// refused for its groups together, "Key".
	Field string

	why string // the reason, each name in braces
	err error  // the store's refusal (a *quota.RuleError); nil: none
}

// Error reads `admit: group "NAME": REASON`, or `admit: route [GROUPS]:
// REASON`, with Go's names, followed by the store's refusal, if any.
func (e *BudgetError) Error() string {
	s := "admit: group " + strconv.Quote(string(e.Group)) + ": "
	if e.Route != nil {
		s = fmt.Sprintf("admit: route %v: ", e.Route)
	}
	s += e.InWords(nil)
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}

// Unwrap returns the store's refusal of the rule the budget makes (a
// *quota.RuleError), or nil.
func (e *BudgetError) Unwrap() error { return e.err }

// InWords returns the reason, without the store's refusal, with each name
// in braces written as word writes it: a Budget's or Route's field
// ("Limit", "Key.Header") or a value ("FixedWindow", "Inf", "None"). A nil
// word, or one that returns "", keeps Go's spelling.
func (e *BudgetError) InWords(word func(name string) string) string {
	var b strings.Builder
	rest := e.why
	for {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest, '}')
		if i < 0 || j < i {
			b.WriteString(rest)
			return b.String()
		}
		name := rest[i+1 : j]
		w := ""
		if word != nil {
			w = word(name)
		}
		if w == "" {
			w = goWord(name)
		}
		b.WriteString(rest[:i])
		b.WriteString(w)
		rest = rest[j+1:]
	}
}

// goWord writes a name of a field or value as a Go program spells it:
// Key.Header as Key.Header, a value such as FixedWindow as Algorithm
// FixedWindow.
func goWord(name string) string {
	switch name {
	case "FixedWindow":
		return "Algorithm FixedWindow"
	case "Inf":
		return "rate.Inf"
	case "ClientKey":
		return "a Key without Header, PathValue or Global"
	case "None":
		return "negative (none)"
	case "ChosenKeys":
		return "Key.Header or Key.PathValue, without Key.Authenticated"
	case "Authenticated":
		return "Key.Authenticated"
	case "Peer":
		return "the client's address"
	}
	return name
}

// fieldsError refuses g's budget for why, a format of args whose names in
// braces InWords rewrites; the first of them is the field at fault.
func fieldsError(g Group, why string, args ...any) *BudgetError {
	if len(args) > 0 {
		why = fmt.Sprintf(why, args...)
	}
	field := ""
	if i, j := strings.IndexByte(why, '{'), strings.IndexByte(why, '}'); 0 <= i && i < j {
		field = why[i+1 : j]
	}
	return &BudgetError{Group: g, Field: field, why: why}
}

// routeError refuses route for field, of group g ("" for the route's
// groups together), for why, a format of args as fieldsError's.
func routeError(route []Group, g Group, field, why string, args ...any) error {
	return &BudgetError{Group: g, Route: append([]Group{}, route...), Field: field, why: fmt.Sprintf(why, args...)}
}
