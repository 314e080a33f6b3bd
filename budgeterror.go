package admit

import (
	"fmt"
	"strconv"
	"strings"
)

// fieldError refuses a group's budget whose fields do not make one
// budget. Its reason names each field (or value) in braces, "{Limit}", so
// that the check is written once: Error writes the names as Go does, and a
// front that reads another format (the server's config file) rewrites them
// in its own words through InWords. New documents both methods.
type fieldError struct {
	group Group
	why   string
}

func (e *fieldError) Error() string {
	return "admit: group " + strconv.Quote(string(e.group)) + ": " + e.InWords(goWord)
}

// Group is the group whose budget is refused.
func (e *fieldError) Group() Group { return e.group }

// InWords is the reason with each name in braces written as word writes
// it; where word returns "", the name keeps Go's word.
func (e *fieldError) InWords(word func(name string) string) string {
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
		w := word(name)
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
	}
	return name
}

// fieldsError refuses g's budget for why, a format of args whose names in
// braces InWords rewrites.
func fieldsError(g Group, why string, args ...any) error {
	if len(args) > 0 {
		why = fmt.Sprintf(why, args...)
	}
	return &fieldError{group: g, why: why}
}
