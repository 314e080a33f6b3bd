// Package testneed decides what a test does when a server or program it
// needs is not there: outside CI it skips, saying how to get it, so that
// go test ./... on a fresh checkout runs what it can; with
// ADMIT_TEST_REQUIRE_SERVICES=1, which scripts/test and so CI set, it
// fails, so that nothing skips where every service is installed.
package testneed

import (
	"os"
	"testing"
)

// EnvRequire is the variable that turns a missing server into a failure.
const EnvRequire = "ADMIT_TEST_REQUIRE_SERVICES"

// Missing ends t for want of what the message names: it fails t when
// EnvRequire is 1, and skips it otherwise. The message should say how to
// install or start what is missing. Like t.Fatalf, it must be called from
// the test's goroutine.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf(format, args...)
		return // a testing.TB that records, not one that stops
	}
	t.Skipf(format+"\n(skipped; with "+EnvRequire+"=1 this fails)", args...)
}
