package routes

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errUncleanPath refuses a pattern whose path ServeMux would not match as
// written.
var errUncleanPath = errors.New("the path has an empty, . or .. segment: requests are cleaned before matching, so it would match none")

// patternError words ServeMux's refusal of pattern in the pattern's own
// terms: the method, host or path segment at fault and what it should be.
// ServeMux's message counts bytes ("at offset 7") and names its reasons
// after its parser. A message of another shape is kept, without the
// pattern it repeats.
func patternError(pattern string, err error) error {
	msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("parsing %q: ", pattern))
	rest, ok := strings.CutPrefix(msg, "at offset ")
	if !ok {
		return errors.New(msg)
	}
	n, why, ok := strings.Cut(rest, ": ")
	off, err := strconv.Atoi(n)
	if !ok || err != nil || off < 0 || off > len(pattern) {
		return errors.New(msg)
	}
	seg := pattern[off:]
	if i := strings.IndexByte(seg, '/'); i >= 0 {
		seg = seg[:i]
	}
	switch {
	case strings.HasPrefix(why, "invalid method "):
		return fmt.Errorf("method %s is not a method name (such as GET or POST)", strings.TrimPrefix(why, "invalid method "))
	case why == "host/path missing /":
		return errors.New("no path: want [METHOD ][HOST]/PATH, such as GET /l/{id}")
	case strings.HasPrefix(why, "host contains '{'"):
		return errors.New("the host holds a '{': wildcards belong in the path, after the first /")
	case strings.HasPrefix(why, "non-CONNECT pattern with unclean path"):
		return errUncleanPath
	case why == "bad wildcard segment (must start with '{')":
		return fmt.Errorf("segment %q: a wildcard is a whole segment, such as {id} or {rest...}", seg)
	case why == "bad wildcard segment (must end with '}')":
		return fmt.Errorf("segment %q has no closing '}': a wildcard is a whole segment, such as {id} or {rest...}", seg)
	case why == "{$} not at end":
		return fmt.Errorf("segment %q: {$} can only end the path", seg)
	case why == "{...} wildcard not at end":
		return fmt.Errorf("segment %q: a {NAME...} wildcard takes the rest of the path, so it must be the last segment", seg)
	case why == "empty wildcard":
		return fmt.Errorf("segment %q: a wildcard needs a name, such as {id}", seg)
	case strings.HasPrefix(why, "bad wildcard name "):
		return fmt.Errorf("segment %q: a wildcard's name is letters, digits and _, not starting with a digit", seg)
	case strings.HasPrefix(why, "duplicate wildcard name "):
		return fmt.Errorf("segment %q: another segment has a wildcard of that name", seg)
	}
	return errors.New(why)
}
