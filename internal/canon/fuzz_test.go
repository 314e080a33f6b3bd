package canon

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzPath checks Path's promises on any input: its output is canonical (a
// second Path returns it unchanged, through the fast scan), unescapes
// cleanly, holds no dot segment, doubled slash or lower-case escape, and
// holds an encoded slash only under Keep.
func FuzzPath(f *testing.F) {
	for _, seed := range []string{
		"/l/x",             // canonical already
		"//l//x/",          // doubled slashes
		"/l/%2e%2e/l/x",    // encoded dot segment
		"/a/./b/../../c",   // dot segments above the root
		"/l%2Fx", "/l%5cx", // encoded slash and backslash
		"/l\\x",              // raw backslash
		"/%6C/%7e",           // escaped unreserved characters
		"/caf\xc3\xa9%c3%a9", // raw and escaped UTF-8
		"/a%", "/a%zz",       // broken escapes
		"/a%00",                // NUL
		"/a{b}|c[d]",           // characters a path may not hold
		"/a%2F..%2Fb",          // encoded slashes around a dot segment
		"/a/..%2F..%2F../b",    // the same, mixed
		"/.%2e/%2E./%2e%2e%2f", // every spelling of ..
	} {
		for _, s := range []Slashes{Reject, Decode, Keep} {
			f.Add(seed, uint8(s))
		}
	}
	f.Fuzz(func(t *testing.T, raw string, policy uint8) {
		slashes := Slashes(policy % 3)
		if !strings.HasPrefix(raw, "/") {
			raw = "/" + raw
		}
		out, err := Path(raw, slashes)
		if err != nil {
			return
		}
		if again, err := Path(out, slashes); again != out || err != nil {
			t.Fatalf("Path(%q) = %q, and Path of that = %q, %v: not canonical", raw, out, again, err)
		}
		if !canonical(out, slashes) {
			t.Fatalf("Path(%q) = %q, which the fast scan does not accept", raw, out)
		}
		if _, err := url.PathUnescape(out); err != nil {
			t.Fatalf("Path(%q) = %q, which does not unescape: %v", raw, out, err)
		}
		if strings.Contains(out, "//") || !strings.HasPrefix(out, "/") {
			t.Fatalf("Path(%q) = %q: doubled or missing leading slash", raw, out)
		}
		for seg := range strings.SplitSeq(out, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("Path(%q) = %q: dot segment left", raw, out)
			}
		}
		upperOut := strings.ToUpper(out)
		if slashes != Keep && (strings.Contains(upperOut, "%2F") || strings.Contains(upperOut, "%5C") || strings.Contains(out, "\\")) {
			t.Fatalf("Path(%q) = %q under %v: an encoded slash survived", raw, out, slashes)
		}
	})
}
